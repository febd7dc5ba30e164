"""What a stored chunk is: its id, its text and the flat metadata every store keeps.

Chroma accepts only flat str/int/float/bool metadata, so every field here is one of
those ("" and -1 stand for "none"). The same keys travel through LlamaIndex nodes,
the Whoosh index and the ingest records.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any


def chunk_id(source: str, index: int) -> str:
    """Deterministic id from file and position (nadir): a re-run upserts, never duplicates."""
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
    text_entropy: float = 0.0   # bits per character (RAGWeed 2c)
    word_count: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkMeta:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class Chunk:
    id: str
    text: str
    meta: ChunkMeta
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def label(self) -> str:
        """`collection/file [p.PAGE]`, as sources are named to the LLM and the user (RAGWeed 5)."""
        page = f" [p.{self.meta.page}]" if self.meta.page else ""
        return f"{self.meta.collection}/{self.meta.source}{page}"
