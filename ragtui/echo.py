"""What an answer copies from its prompt, and an answer that says nothing: citations that are not claims.

A small model often writes part of its prompt back: a source header
(`[1] SOURCE: docs/pumps.md`), its `ANNOTATION:` line, the fenced text, the
question, an example from the instructions ("like [2] or [1][3]"). A "[1]" inside
such a copy is the prompt's numbering, not a claim that source 1 says something,
and an answer that is mostly such a copy answers nothing while looking cited.

The comparison is on tokens: words (case-folded), citation brackets ("[1]",
"[2, 3]", "[2-4]"), the prompt's labels `SOURCES:`, `SOURCE:`, `QUESTION:` and its
fence lines `<<<` / `>>>`. A stretch of the answer is copied when every run of
`RUN_TOKENS` tokens in it occurs in the prompt. A citation inside a copied stretch
is not a citation: the prompt had that "[N]" there (a header, the instructions'
example, a source's own footnote). A sentence quoted from a source and cited after
it is no copy of its "[N]": the prompt never has that "[N]" after that sentence.
A copied stretch that holds a label or a fence line is an echo of the prompt's
frame; an answer whose tokens are `ECHO_SHARE` or more echo is an echo. (An
`ANNOTATION:` line is the annotator's quote of its source and why it matters; an
answer that takes that quote and cites its source after it, as an extractive model
does, quotes the source, so that label alone makes no echo.)

An answer that cites sources and says nothing of what they say ("The source is [1]
and the other two are [2] and [3].") is a non-answer (`says_nothing`): none of its
words, other than function words, words about sources and numbers, occurs in the
sources it was given.

Pure functions, no I/O: the engine keeps only the citations that are claims, and the
turn says whether its answer is an echo or a non-answer, from what history stores.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from ragtui.words import FUNCTION_WORDS

RUN_TOKENS = 4          # a copied stretch: every run of this many tokens in it is in the prompt
ECHO_SHARE = 0.5        # an answer this much echo is an echo
_TOKEN = re.compile(r"\[\s*\d+(?:\s*[-–,;]\s*\d+)*\s*\]|\b(?:SOURCES?|QUESTION):|<<<|>>>|\w+")
_WORD = re.compile(r"\w+")
# Words an answer uses to talk about its sources rather than about what they say.
SOURCE_TALK = frozenset({
    "source", "sources", "extract", "extracts", "document", "documents", "passage", "passages", "text", "texts",
    "reference", "references", "cite", "cites", "cited", "citation", "citations", "number", "numbers", "numbered",
    "list", "listed", "given", "provided", "mention", "mentions", "mentioned", "relevant", "information",
    "answer", "answers", "answered", "question", "questions", "other", "others", "one", "two", "three", "four",
    "five", "first", "second", "third", "last", "see", "also", "both", "all", "each", "here", "following",
    "according", "say", "says", "said", "state", "states", "stated", "about", "which", "not", "no", "yes",
    "above", "below", "same", "those", "sure", "based", "found", "contains", "contain",
})


def _is_frame(token: str) -> bool:
    return token.endswith(":") or token in ("<<<", ">>>")


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """(key, start, end) per token: a citation bracket without its spaces, a label or fence as written, a word
    case-folded."""
    return [("".join(m.group().split()) if m.group().startswith("[") or _is_frame(m.group())
             else m.group().casefold(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


@lru_cache(maxsize=8)
def _runs_of(prompt: tuple[str, ...]) -> frozenset[tuple[str, ...]]:
    runs: set[tuple[str, ...]] = set()
    for text in prompt:
        keys = [key for key, _, _ in _tokens(text)]
        runs.update(tuple(keys[i:i + RUN_TOKENS]) for i in range(len(keys) - RUN_TOKENS + 1))
    return frozenset(runs)


@lru_cache(maxsize=64)
def _echo(answer: str, prompt: tuple[str, ...]) -> tuple[tuple[tuple[int, int], ...], float]:
    tokens = _tokens(answer)
    if not tokens:
        return (), 0.0
    runs = _runs_of(prompt)
    copied = [False] * len(tokens)
    for i in range(len(tokens) - RUN_TOKENS + 1):
        if tuple(key for key, _, _ in tokens[i:i + RUN_TOKENS]) in runs:
            copied[i:i + RUN_TOKENS] = [True] * RUN_TOKENS
    spans, echoed, at = [], 0, 0
    while at < len(tokens):
        if not copied[at]:
            at += 1
            continue
        end = at
        while end < len(tokens) and copied[end]:
            end += 1
        if any(key.startswith("[") for key, _, _ in tokens[at:end]):
            spans.append((tokens[at][1], tokens[end - 1][2]))
        if any(_is_frame(key) for key, _, _ in tokens[at:end]):
            echoed += end - at
        at = end
    return tuple(spans), echoed / len(tokens)


def echoed_spans(answer: str, prompt: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """(start, end) of each stretch of `answer` copied from the `prompt` messages' texts with a citation bracket
    in it: the citations there are the prompt's, not the answer's."""
    return _echo(answer, tuple(prompt))[0]


def is_echo(answer: str, prompt: Sequence[str]) -> bool:
    """Whether `answer` is mostly (ECHO_SHARE of its tokens or more) text copied from the prompt's frame."""
    return _echo(answer, tuple(prompt))[1] >= ECHO_SHARE


def says_nothing(answer: str, sources: Sequence[str]) -> bool:
    """Whether no word of `answer` but function words, words about sources (SOURCE_TALK) and numbers occurs in
    any of the `sources` texts: an answer that names sources and says nothing they say."""
    said = {w.casefold() for w in _WORD.findall(answer)} - FUNCTION_WORDS - SOURCE_TALK
    said = {w for w in said if not w.isdigit()}
    return not said or not any(w in _source_words(tuple(sources)) for w in said)


@lru_cache(maxsize=8)
def _source_words(sources: tuple[str, ...]) -> frozenset[str]:
    return frozenset(w.casefold() for text in sources for w in _WORD.findall(text))
