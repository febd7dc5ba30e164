"""Every check a bundle records, computed from a conversation: the one function the bundle's writer records
and its verifier recomputes, so that an untouched bundle verifies by construction.

The rules are their own modules' (`quotes`: attributed quotes, verified, misattributed or not found;
`numbers`: the numbers a cited sentence states that its sources do not hold; `echo`: an answer copied from its
prompt, or one that says nothing; `model/conversation.py`: whether a source is used, from its verdict and the
user's override, and what its annotation misquotes). Nothing here judges anything itself.
"""

from __future__ import annotations

from typing import Any

from ragtui.llm.citations import number_checks, quote_checks
from ragtui.model.conversation import Conversation, SessionSource, Turn


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
