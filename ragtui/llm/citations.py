"""Citations in an answer: [3], [1, 2], [1][2], [2-4] mapped back to source numbers."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

_PART = r"\d+(?:\s*[-–]\s*\d+)?"
_CITE = re.compile(rf"\[\s*({_PART}(?:\s*[,;]\s*{_PART})*)\s*\](?!\()")
_RANGE = re.compile(r"(\d+)(?:\s*[-–]\s*(\d+))?")
MAX_RANGE = 100      # "[1-5000]" is not a citation of 5,000 sources


@dataclass(frozen=True)
class Citations:
    cited: tuple[int, ...]           # every number cited, in order of first appearance
    unknown: tuple[int, ...]         # cited numbers that were not in the prompt


def cited_numbers(text: str) -> tuple[int, ...]:
    """Numbers cited in `text`, in order of first appearance, without repeats.

    A bracket followed by "(" is a Markdown link label, not a citation.
    """
    seen: dict[int, None] = {}
    for match in _CITE.finditer(text):
        for part in re.split(r"\s*[,;]\s*", match.group(1).strip()):
            bounds = _RANGE.fullmatch(part)
            if bounds is None:
                continue
            start = int(bounds.group(1))
            end = int(bounds.group(2) or start)
            if end < start or end - start > MAX_RANGE:
                end = start
            for number in range(start, end + 1):
                seen.setdefault(number, None)
    return tuple(seen)


def check_citations(text: str, in_prompt: Collection[int]) -> Citations:
    """The citations of an answer, with the ones pointing outside the prompt flagged."""
    cited = cited_numbers(text)
    return Citations(cited=cited, unknown=tuple(n for n in cited if n not in in_prompt))
