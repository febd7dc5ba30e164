"""The collection-quality report: how clean an ingest's chunks are, at a glance (`collections info`).

Five figures a user (and we) can act on: the share of chunks per file type (did
assets or one huge file swamp the collection?), chunks whose start splits a word
(the chunker's edges), chunks that start inside a table or code fence without
repeating its header row or opening line (a table or fence cut apart), chunks
without a heading path (whether the structure of PDFs, HTML and markdown was
found), and chunks the filters dropped, tables of contents and indexes among
them, with the files that lost all or most of theirs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ragtui.ingest.chunking import mid_word
from ragtui.ingest.structure import format_parts

STRUCTURED = ("pdf", "html", "md")      # formats whose headings ingest reads (plain text has none)


@dataclass
class Quality:
    chunks: int = 0
    by_format: Counter[str] = field(default_factory=Counter)
    mid_word: int = 0
    cut_block: int = 0                  # starting inside a table or fence without its lead
    with_lead: int = 0                  # carrying a repeated table header or fence line
    no_heading: int = 0
    no_heading_by_format: Counter[str] = field(default_factory=Counter)
    filtered: Counter[str] = field(default_factory=Counter)                 # dropped chunks per reason
    mostly_filtered: list[tuple[str, int, int]] = field(default_factory=list)  # (source, kept, dropped)

    def share(self, n: int) -> float:
        return n / self.chunks if self.chunks else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "by_format": dict(self.by_format), "mid_word": self.mid_word,
                "cut_block": self.cut_block, "with_lead": self.with_lead,
                "no_heading": self.no_heading, "no_heading_by_format": dict(self.no_heading_by_format),
                "filtered": dict(self.filtered),
                "mostly_filtered": [list(t) for t in self.mostly_filtered]}

    def lines(self) -> list[str]:
        out = [f"quality of {self.chunks} chunks:"]
        if self.by_format:
            out.append("  by file type: " + ", ".join(
                f"{fmt} {n} ({self.share(n):.0%})" for fmt, n in self.by_format.most_common()))
        out.append(f"  starting mid-word: {self.mid_word} ({self.share(self.mid_word):.1%})")
        out.append(f"  starting inside a table or code fence: {self.cut_block} ({self.share(self.cut_block):.1%}); "
                   f"repeating a table header or fence line: {self.with_lead}")
        structured = [f"{fmt} {self.no_heading_by_format[fmt]} of {self.by_format[fmt]}"
                      for fmt in STRUCTURED if self.by_format[fmt]]
        out.append(f"  empty heading path: {self.no_heading} ({self.share(self.no_heading):.1%})"
                   + (f"; {', '.join(structured)}" if structured else ""))
        dropped = sum(self.filtered.values())
        out.append(f"  filtered out: {dropped}" + (" (" + ", ".join(
            f"{n} {r}" for r, n in sorted(self.filtered.items())) + ")" if dropped else ""))
        for source, kept, lost in self.mostly_filtered:
            out.append(f"    {source}: {lost} of {kept + lost} chunks filtered")
        return out


def quality(edges: Iterable[tuple[str, str, str, int, int]],
            filtered: Iterable[tuple[str, int, dict[str, int]]]) -> Quality:
    """The report from every indexed chunk's (format, heading path, its file's text, start, lead length), a
    file's chunks together, and each file's (source, chunks kept, chunks dropped per reason)."""
    q = Quality()
    blocks: list[tuple[int, int]] = []
    seen: str | None = None
    for fmt, heading, text, start, lead in edges:
        if text is not seen:
            seen, blocks = text, _blocks(text, fmt)
        q.chunks += 1
        q.by_format[fmt] += 1
        q.mid_word += start > 0 and mid_word(text[start - 1:start + 1], 1)
        q.cut_block += not lead and any(a < start < b for a, b in blocks)
        q.with_lead += lead > 0
        q.no_heading += not heading
        q.no_heading_by_format[fmt] += not heading
    for source, kept, dropped in filtered:
        q.filtered.update(dropped)
        lost = sum(dropped.values())
        if lost and lost >= kept:
            q.mostly_filtered.append((source, kept, lost))
    return q


def _blocks(text: str, fmt: str) -> list[tuple[int, int]]:
    """The whole tables and code fences of a file's text as its chunker keeps them (list items left out: a long
    one may be cut)."""
    return [(u.start, u.end) for u in format_parts(text, len(text) + 1, fmt) if u.kind != "item"]
