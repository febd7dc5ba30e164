"""The collection-quality report: how clean an ingest's chunks are, at a glance (`collections info`).

Four figures a user (and we) can act on: the share of chunks per file type (did
assets or one huge file swamp the collection?), chunks whose start splits a word
(the chunker's edges), chunks without a heading path (whether the structure of
PDFs, HTML and markdown was found), and chunks the filters dropped, tables of
contents and indexes among them, with the files that lost all or most of theirs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ragtui.ingest.chunking import mid_word

STRUCTURED = ("pdf", "html", "md")      # formats whose headings ingest reads (plain text has none)


@dataclass
class Quality:
    chunks: int = 0
    by_format: Counter[str] = field(default_factory=Counter)
    mid_word: int = 0
    no_heading: int = 0
    no_heading_by_format: Counter[str] = field(default_factory=Counter)
    filtered: Counter[str] = field(default_factory=Counter)                 # dropped chunks per reason
    mostly_filtered: list[tuple[str, int, int]] = field(default_factory=list)  # (source, kept, dropped)

    def share(self, n: int) -> float:
        return n / self.chunks if self.chunks else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "by_format": dict(self.by_format), "mid_word": self.mid_word,
                "no_heading": self.no_heading, "no_heading_by_format": dict(self.no_heading_by_format),
                "filtered": dict(self.filtered),
                "mostly_filtered": [list(t) for t in self.mostly_filtered]}

    def lines(self) -> list[str]:
        out = [f"quality of {self.chunks} chunks:"]
        if self.by_format:
            out.append("  by file type: " + ", ".join(
                f"{fmt} {n} ({self.share(n):.0%})" for fmt, n in self.by_format.most_common()))
        out.append(f"  starting mid-word: {self.mid_word} ({self.share(self.mid_word):.1%})")
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


def quality(edges: Iterable[tuple[str, str, str, str]],
            filtered: Iterable[tuple[str, int, dict[str, int]]]) -> Quality:
    """The report from every indexed chunk's (format, heading path, character before its start, first
    character) and each file's (source, chunks kept, chunks dropped per reason)."""
    q = Quality()
    for fmt, heading, before, first in edges:
        q.chunks += 1
        q.by_format[fmt] += 1
        q.mid_word += bool(before) and mid_word(before + first, 1)
        q.no_heading += not heading
        q.no_heading_by_format[fmt] += not heading
    for source, kept, dropped in filtered:
        q.filtered.update(dropped)
        lost = sum(dropped.values())
        if lost and lost >= kept:
            q.mostly_filtered.append((source, kept, lost))
    return q
