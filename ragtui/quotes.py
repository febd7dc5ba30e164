"""Quotes checked against the text they claim to come from: a model's quote is a claim, not evidence.

A model may put words in quotation marks that its source never said, or say a
source said what another one (a document posing as a source) did. So every passage
a model quotes is looked up in the text it is attributed to: an answer's quote in
the source its citation names, an annotation's quote in the chunk it annotates.

What counts as a quote: text between "double", “curly” or «angle» quotation marks
with at least `MIN_WORDS` words (shorter ones are terms, not quotations). The
comparison is on words: Unicode compatibility-folded, case-folded, so whitespace,
line breaks, punctuation and the kind of quotation mark or apostrophe never decide
it. An ellipsis ("...", "…", "[...]") or any bracketed insertion such as a citation
inside the quote splits it into parts that must all occur, in order.

Pure functions, no I/O: the engine checks, the front ends only show the result.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

MIN_WORDS = 3
_QUOTED = re.compile(r'"([^"]{1,2000}?)"|“([^”]{1,2000}?)”|«([^»]{1,2000}?)»')
_GAP = re.compile(r"\.\.\.|…|\[[^\]]*\]")
_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n")
NEAR = 60          # how far (characters, same sentence) a citation may sit from the quote it attributes


class Cited(Protocol):
    """A citation found in an answer: answer[start:end] is its bracket, `numbers` the sources it names."""

    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def numbers(self) -> tuple[int, ...]: ...


@dataclass(frozen=True)
class QuoteCheck:
    """One passage an answer quotes and attributes to sources, and where it was actually found."""

    quote: str
    cited: tuple[int, ...]          # the sources its citation names
    found_in: tuple[int, ...]       # the sources whose text holds it (any of those checked)
    cite_at: int = -1               # where the attributing citation starts in the answer

    @property
    def verified(self) -> bool:
        return any(n in self.found_in for n in self.cited)

    def to_json(self) -> dict[str, object]:
        return {"quote": self.quote, "cited": list(self.cited), "found_in": list(self.found_in),
                "verified": self.verified}


@lru_cache(maxsize=512)
def _words(text: str) -> str:
    """The text as " word word word ", folded: the form every comparison is made on."""
    return " " + " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold())) + " "


def _parts(quote: str) -> list[str]:
    return [words for piece in _GAP.split(quote) if (words := _words(piece)).strip()]


def _word_count(quote: str) -> int:
    return sum(len(part.split()) for part in _parts(quote))


def occurs(quote: str, text: str) -> bool:
    """Whether every part of `quote` occurs in `text`, whole words, in order."""
    haystack = _words(text)
    at = 0
    for part in _parts(quote):
        found = haystack.find(part, at)
        if found < 0:
            return False
        at = found + len(part) - 1
    return True


def quoted_passages(text: str) -> list[tuple[int, int, str]]:
    """(start, end, quote) for each passage in quotation marks long enough to be a quotation."""
    found = []
    for match in _QUOTED.finditer(text):
        quote = next(g for g in match.groups() if g is not None)
        if _word_count(quote) >= MIN_WORDS:
            found.append((match.start(), match.end(), quote))
    return found


def misquotes(annotation: str, text: str) -> tuple[str, ...]:
    """The quotes of an annotation that its chunk's text does not hold (none quoted: nothing to flag)."""
    return tuple(quote for _, _, quote in quoted_passages(annotation) if not occurs(quote, text))


def check_quotes(answer: str, citations: Sequence[Cited], texts: Mapping[int, str]) -> tuple[QuoteCheck, ...]:
    """Every quote of `answer` that a citation attributes to sources, looked up in all of `texts`.

    The attributing citation is the first one after the closing mark within `NEAR` characters of the same
    sentence ("..." [2], "...", as [2] says), else the last one before the quote in the same sentence
    (according to [2], "..."). A quote no citation attributes is not checked: it claims no source.
    """
    checks = []
    for start, end, quote in quoted_passages(answer):
        at, cited = _attribution(answer, start, end, citations)
        if cited:
            checks.append(QuoteCheck(quote.strip(), cited,
                                     tuple(n for n, text in sorted(texts.items()) if occurs(quote, text)), at))
    return tuple(checks)


def _attribution(answer: str, start: int, end: int, citations: Sequence[Cited]) -> tuple[int, tuple[int, ...]]:
    """(where the attributing citation starts, the sources it and the citations right beside it name)."""
    after = next((i for i, c in enumerate(citations) if c.start >= end), None)
    if after is not None and _same_sentence(answer[end:citations[after].start]):
        return citations[after].start, _run(answer, citations, after)
    before = next((i for i in reversed(range(len(citations))) if citations[i].end <= start), None)
    if before is not None and _same_sentence(answer[citations[before].end:start]):
        while before and not answer[citations[before - 1].end:citations[before].start].strip(" ,;"):
            before -= 1
        return citations[before].start, _run(answer, citations, before)
    return -1, ()


def _run(answer: str, citations: Sequence[Cited], first: int) -> tuple[int, ...]:
    """The numbers of citations[first] and of those following it with nothing but spaces or commas between
    ("[1][2]", "[1], [3]")."""
    numbers = list(citations[first].numbers)
    for prev, nxt in zip(citations[first:], citations[first + 1:], strict=False):
        if answer[prev.end:nxt.start].strip(" ,;"):
            break
        numbers += nxt.numbers
    return tuple(dict.fromkeys(numbers))


def _same_sentence(gap: str) -> bool:
    return len(gap) <= NEAR and not _SENTENCE_END.search(gap) and not _QUOTED.search(gap) and '"' not in gap
