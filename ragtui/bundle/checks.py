"""Every check a bundle records, computed from a conversation: the one function the bundle's writer records
and its verifier recomputes, so that an untouched bundle verifies by construction.

The rules are their own modules' (`quotes`: attributed quotes, verified, misattributed or not found;
`numbers`: the numbers a cited sentence states that its sources do not hold; `echo`: an answer copied from its
prompt, or one that says nothing; `model/conversation.py`: whether a source is used, from its verdict and the
user's override, and what its annotation misquotes). Nothing here judges anything itself.
"""

from __future__ import annotations

from typing import Any

from ragtui.llm.citations import citation_spans, number_checks, quote_checks
from ragtui.model.conversation import Conversation, SessionSource, Turn
from ragtui.quotes import quoted_passages

# How much text the checks of one bundle may look through: each quote of an answer is looked up in every source's
# text, and each citation's numbers in the text of the sources it names, so the work grows as quotes x (all text)
# plus citations x (cited text). A session of 5 turns, each quoting 5 passages, over 80 sources of 2,000
# characters, is 4e6; at 1e8 `ragtui verify` takes a few seconds (docs/benchmarks.md), and a bundle built to keep
# it busy for minutes is refused instead.
MAX_WORK = 10**8


def turn_checks(conversation: Conversation, turn: Turn) -> dict[str, Any]:
    """A turn's answer checked: each quote it attributes (looked up in every source of the session, as the
    session checks it), each number its cited sources do not hold, and whether it is an echo of its prompt,
    a non-answer or uncited."""
    texts = {s.number: s.chunk.text for s in conversation.all_sources}
    return {"quotes": [check.to_json() for check in quote_checks(turn.answer, texts)],
            "numbers": [check.to_json() for check in number_checks(turn.answer, texts)],
            "echo": turn.echo, "non_answer": turn.non_answer, "uncited": turn.uncited}


def source_checks(source: SessionSource) -> dict[str, Any]:
    """Whether a source went into the answer (its verdict, unless overridden) and what its annotation quotes
    that its text does not hold."""
    return {"used": source.relevant, "misquoted": list(source.misquoted)}


def work(conversation: Conversation) -> int:
    """About how many characters of source text the checks of `conversation` look through (`MAX_WORK`): each
    quote through every source's text, each citation through the texts of the sources it names; each source
    counted 100 more for its own cost (a quote is folded and looked up in each one)."""
    sizes = {s.number: len(s.chunk.text) + 100 for s in conversation.all_sources}
    quoted = sum(len(quoted_passages(t.answer)) for t in conversation.turns) * sum(sizes.values())
    cited = sum(sizes.get(n, 0) for t in conversation.turns for span in citation_spans(t.answer)
                for n in span.numbers)
    own = sum(len(quoted_passages(s.annotation)) * len(s.chunk.text) for s in conversation.all_sources)
    return quoted + cited + own
