"""Citations in an answer: [3], [1, 2], [1][2], [2-4] mapped back to source numbers.

The one parser of citations: the engine checks an answer's citations with it and
the TUI turns the same spans into links, so both agree on what is a citation. What
the answer copied from its prompt (a source header written back) holds no citation
that counts as a claim (`claimed_spans`, `ragtui.echo`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ragtui.echo import echoed_spans
from ragtui.numbers import NumberCheck, check_numbers
from ragtui.quotes import QuoteCheck, check_quotes

_PART = r"\d+(?:\s*[-–]\s*\d+)?"
_CITE = re.compile(rf"\[\s*({_PART}(?:\s*[,;]\s*{_PART})*)\s*\](?!\()")
_RANGE = re.compile(r"(\d+)(?:\s*[-–]\s*(\d+))?")
MAX_RANGE = 100      # "[1-5000]" is not a citation of 5,000 sources


@dataclass(frozen=True)
class CitationSpan:
    """One bracketed citation: text[start:end] is the bracket, `numbers` the sources it names, in its order."""

    start: int
    end: int
    numbers: tuple[int, ...]


@dataclass(frozen=True)
class Citations:
    cited: tuple[int, ...]           # every number cited, in order of first appearance
    unknown: tuple[int, ...]         # cited numbers that were not in the prompt


def _numbers(group: str) -> tuple[int, ...]:
    """A group such as "1, 2-4" as (1, 2, 3, 4); a reversed or oversized range counts as its first number."""
    numbers: list[int] = []
    for bounds in _RANGE.finditer(group):
        start = int(bounds.group(1))
        end = int(bounds.group(2) or start)
        if end < start or end - start > MAX_RANGE:
            end = start
        numbers.extend(range(start, end + 1))
    return tuple(numbers)


def citation_spans(text: str) -> tuple[CitationSpan, ...]:
    """Every citation in `text`, in order. A bracket followed by "(" is a Markdown link label, not a citation."""
    return tuple(CitationSpan(m.start(), m.end(), _numbers(m.group(1))) for m in _CITE.finditer(text))


def cited_numbers(text: str) -> tuple[int, ...]:
    """Numbers cited in `text`, in order of first appearance, without repeats."""
    return tuple(dict.fromkeys(n for span in citation_spans(text) for n in span.numbers))


def claimed_spans(text: str, prompt: Sequence[str]) -> tuple[CitationSpan, ...]:
    """The citations of an answer that are claims: not inside a stretch it copied from the `prompt` messages'
    texts with part of the prompt's frame (`echo.echoed_spans`: "[1] SOURCE: ..." written back)."""
    copied = echoed_spans(text, prompt) if prompt else ()
    return tuple(span for span in citation_spans(text)
                 if not any(start <= span.start and span.end <= end for start, end in copied))


def check_citations(text: str, in_prompt: Collection[int], prompt: Sequence[str] = ()) -> Citations:
    """The citations of an answer that are claims (`claimed_spans`), with the ones pointing outside the prompt
    flagged."""
    cited = tuple(dict.fromkeys(n for span in claimed_spans(text, prompt) for n in span.numbers))
    return Citations(cited=cited, unknown=tuple(n for n in cited if n not in in_prompt))


def quote_checks(text: str, sources: Mapping[int, str]) -> tuple[QuoteCheck, ...]:
    """Each quote of an answer that a citation attributes, looked up in every source's text (`quotes`)."""
    return check_quotes(text, citation_spans(text), sources)


def number_checks(text: str, sources: Mapping[int, str]) -> tuple[NumberCheck, ...]:
    """Each number a sentence of an answer states that the sources it cites do not hold (`numbers`)."""
    return check_numbers(text, citation_spans(text), sources)
