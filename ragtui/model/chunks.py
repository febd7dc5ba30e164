"""Chunks: a piece of a document's text with where it came from, and where a retrieval leg ranked it.

Chroma accepts only flat str/int/float/bool metadata, so every `ChunkMeta` field is
one of those ("" and -1 stand for "none"). The same keys travel through LlamaIndex
nodes, the Whoosh index and the ingest records.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


def _file_digest(source: str) -> str:
    return hashlib.sha1(source.encode("utf-8")).hexdigest()[:16]


def chunk_id(source: str, index: int) -> str:
    """Deterministic id from file and position: a re-run upserts, never duplicates."""
    return f"{_file_digest(source)}-{index:05d}"


def sentence_id(source: str, n: int) -> str:
    """The id of a file's `n`th sentence in a sentence index (sentence-window retrieval): the file's chunk-id
    digest and the number, so the sentences around one are found by id."""
    return f"{_file_digest(source)}-s{n:06d}"


def parse_sentence_id(sid: str) -> tuple[str, int] | None:
    """(the file's digest, the sentence's number) of a sentence id; None for any other id."""
    digest, _, n = sid.rpartition("-s")
    return (digest, int(n)) if digest and n.isdigit() else None


@dataclass(frozen=True)
class ChunkMeta:
    collection: str
    source: str                 # path relative to the ingested root; "a.zip/inner.txt" for members
    file_hash: str              # sha256 of the file's bytes
    format: str                 # "pdf", "md", "txt", ...
    chunk_index: int
    char_start: int             # offsets into the extracted document text
    char_end: int
    page: str = ""              # page label as printed ([p.PAGE]); "" when the format has no pages
    page_index: int = -1        # 0-based page number for opening the document there
    heading: str = ""           # heading path "Intro > Install"; "" when none
    text_entropy: float = 0.0   # bits per byte of the text in its file's encoding
    word_count: int = 0
    # Where a chunk that runs over page breaks moves on to each next page, as JSON
    # [[offset into the chunk's text, page label, page index], ...]; "" when it lies on one page
    # (and in chunks ingested before this was recorded: they are cited by their first page).
    page_breaks: str = ""
    # Characters the chunk's text repeats before its span: a table's caption and header row, or a code
    # fence's opening line, when the chunk holds a later part of a table or fence too long for one chunk.
    # The span text[char_start:char_end] follows them (and a split fence's closing marker follows it).
    lead: int = 0

    def breaks(self) -> list[tuple[int, str, int]]:
        """The page breaks inside the chunk, in order; none when the record is missing or unreadable."""
        if not self.page_breaks:
            return []
        try:
            return [(int(at), str(label), int(index)) for at, label, index in json.loads(self.page_breaks)]
        except (ValueError, TypeError, RecursionError):     # a damaged record, or a bundle's nested brackets
            return []

    @property
    def last_page(self) -> str:
        """The label of the page the chunk ends on (its first page when it lies on one)."""
        breaks = self.breaks()
        return breaks[-1][1] if breaks else self.page

    @property
    def pages(self) -> str:
        """`12` or, over a page break, `12-13`: how a citation names the chunk's pages ("" without pages)."""
        last = self.last_page
        return f"{self.page}-{last}" if last and last != self.page else self.page

    def page_of(self, text: str, holds: Callable[[str], bool]) -> str:
        """The label of the one page whose part of the chunk's `text` `holds` something (a quote), else ""."""
        if not self.page:
            return ""
        cuts = [(0, self.page), *((at, label) for at, label, _ in self.breaks())]
        parts = [(label, text[at:end]) for (at, label), (end, _) in zip(cuts, [*cuts[1:], (len(text), "")],
                                                                         strict=True)]
        found = {label for label, part in parts if holds(part)}
        return found.pop() if len(found) == 1 else ""

    def to_dict(self) -> dict[str, Any]:
        """The flat fields by name (`asdict` deep-copies, ~10x slower; a query builds a node's metadata
        for each of up to 128 hits)."""
        return {name: getattr(self, name) for name in _META_FIELDS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkMeta:
        """Unknown keys (metadata written by another version, or added by a store) are dropped."""
        try:
            return cls(**data)
        except TypeError:
            return cls(**{k: v for k, v in data.items() if k in _META_FIELDS})


_META_FIELDS = tuple(ChunkMeta.__dataclass_fields__)


@dataclass(frozen=True)
class Chunk:
    id: str
    text: str
    meta: ChunkMeta

    @property
    def span_text(self) -> str:
        """The part of the text that is the document's text[char_start:char_end] (the text without a
        repeated header row or fence line)."""
        return self.text[self.meta.lead:self.meta.lead + self.meta.char_end - self.meta.char_start]

    @property
    def label(self) -> str:
        """`collection/file [p.PAGE]` (`[pp.FIRST-LAST]` over a page break), as sources are named to the LLM and
        the user."""
        pages = self.meta.pages
        page = f" [{'pp' if pages != self.meta.page else 'p'}.{pages}]" if pages else ""
        return f"{self.meta.collection}/{self.meta.source}{page}"

    @property
    def vector_key(self) -> bytes:
        """What a vector of this chunk is reused by (with the model): its heading path and text, hashed. The
        file's path is left out, so that a moved or renamed file, or a copy of a passage in another file, takes
        the vectors already made; the contextual prefix embedded with a vector then names the file it was first
        made for (ingest/embedding.py)."""
        return hashlib.blake2b(f"{self.meta.heading}\0{self.text}".encode(), digest_size=16).digest()


@dataclass(frozen=True)
class LegRank:
    """Where one retrieval leg put a chunk: its 1-based rank within its collection and its score there.

    `leg` is "vector", "keyword", "fused" or "rerank"; for a follow-up turn, which
    retrieves twice, "rewrite:" prefixes the legs of the rewritten question's run and
    "query"/"rewrite" hold each run's rank before the two are fused.
    """

    leg: str
    rank: int
    score: float


def leg_score(evidence: Sequence[LegRank], leg: str) -> float | None:
    """The score `leg` gave, None when that leg did not rank the chunk."""
    return next((e.score for e in evidence if e.leg == leg), None)
