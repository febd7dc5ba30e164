"""What extraction yields: a file's text as a document (its pages and heading paths), or the reason it was skipped."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ragtui.errors import RagtuiError


class ExtractError(RagtuiError):
    """This file cannot be turned into text; the message is the reason shown to the user."""


@dataclass(frozen=True)
class Page:
    start: int            # offset of the page's first character in the document text
    label: str            # printed page label, or the 1-based number when the PDF defines none
    index: int            # 0-based page number


@dataclass
class Extracted:
    source: str
    text: str
    format: str
    kind: str = "text"    # "text" | "pdf" | "av": picks the chunk size (chunk.size_tokens*)
    pages: list[Page] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)   # (offset, heading path), ascending
    encoding: str = "utf-8"   # what the file's bytes were decoded from; entropy is taken over those bytes


def heading_path_at(headings: list[tuple[int, str]], offset: int) -> str:
    """The heading path in force at `offset` ("" before the first heading)."""
    i = bisect.bisect_right([h[0] for h in headings], offset) - 1
    return headings[i][1] if i >= 0 else ""


@dataclass(frozen=True)
class Skip:
    source: str
    reason: str
