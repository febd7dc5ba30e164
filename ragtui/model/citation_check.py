"""How a saved session's citation stands against its collection as it is now: current, moved, changed or gone.

A session keeps the text of every chunk it cited, so what it says stays readable after the
document changes; this records whether the document still says it (`ragtui.citation_recheck` decides,
the history stores it, the front ends show it).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ragtui.sanitize import clean, one_line


class CitationState(StrEnum):
    CURRENT = "current"    # the cited chunk still says what the session quoted, where it said it
    MOVED = "moved"        # the quotes are still in the document, now in another chunk or on another page
    CHANGED = "changed"    # the document is still there, but a quote (or, with none, the chunk's text) is not
    GONE = "gone"          # the file left the collection (or the collection is gone)


@dataclass(frozen=True)
class CitationCheck:
    """One source of a saved session checked against its document as it now is.

    For `moved`, `chunk_id` and `pages` say where the quotes are now (`label` names the chunk as sources are
    named); for `changed`, `missing` is the quote the document no longer holds ("" when the source had no
    quote and its chunk's text is what changed)."""

    number: int
    state: CitationState
    cited: str = ""                  # the cited chunk's label as the session has it (`Chunk.label`)
    chunk_id: str = ""
    pages: str = ""
    label: str = ""
    missing: str = ""
    checked_at: str = ""

    @property
    def stale(self) -> bool:
        return self.state is not CitationState.CURRENT

    @property
    def verdict(self) -> str:
        """The state in words: "moved to docs/a.pdf [pp.4-5] (chunk …-00003), the quote on page 5" (the page
        only when the chunk's label does not already say it), "changed: "…" is no longer in the document",
        "gone: the file is no longer in the collection", "current"."""
        if self.state is CitationState.MOVED:
            page = one_line(self.pages)
            on = f", the quote on page {page}" if page and not self.label.endswith(f"[p.{page}]") else ""
            return f"moved to {one_line(self.label)} (chunk {self.chunk_id}){on}"
        if self.state is CitationState.CHANGED:
            what = f'"{one_line(self.missing)}"' if self.missing else "the chunk's text"
            return f"changed: {what} is no longer in the document"
        if self.state is CitationState.GONE:
            return "gone: the file is no longer in the collection"
        return "current"

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, "cited": one_line(self.cited), "state": self.state.value, "stale": self.stale,
                "chunk_id": self.chunk_id, "pages": one_line(self.pages), "label": one_line(self.label),
                "missing": clean(self.missing), "verdict": self.verdict, "checked_at": self.checked_at}


@dataclass(frozen=True)
class SessionCheck:
    """A saved session's sources checked (`checks`, by source number)."""

    session_id: int
    query: str
    checks: tuple[CitationCheck, ...]

    @property
    def stale(self) -> tuple[CitationCheck, ...]:
        return tuple(c for c in self.checks if c.stale)

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session_id, "query": clean(self.query), "sources": len(self.checks),
                "stale": len(self.stale), "checks": [c.to_json() for c in self.checks]}
