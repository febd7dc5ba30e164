"""Chunks: a piece of a document's text with where it came from, and where a retrieval leg ranked it.

Chroma accepts only flat str/int/float/bool metadata, so every `ChunkMeta` field is
one of those ("" and -1 stand for "none"). The same keys travel through LlamaIndex
nodes, the Whoosh index and the ingest records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def chunk_id(source: str, index: int) -> str:
    """Deterministic id from file and position: a re-run upserts, never duplicates."""
    digest = hashlib.sha1(source.encode("utf-8")).hexdigest()[:16]
    return f"{digest}-{index:05d}"


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
    def label(self) -> str:
        """`collection/file [p.PAGE]`, as sources are named to the LLM and the user."""
        page = f" [p.{self.meta.page}]" if self.meta.page else ""
        return f"{self.meta.collection}/{self.meta.source}{page}"


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
