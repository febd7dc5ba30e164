"""The domain model: stored chunks, the sources of one research session, and their states.

Chroma accepts only flat str/int/float/bool metadata, so every `ChunkMeta` field is
one of those ("" and -1 stand for "none"). The same keys travel through LlamaIndex
nodes, the Whoosh index and the ingest records.

Everything here is frozen: a research session replaces a `SessionSource` when its
state changes, so an event that carried the old value keeps it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from ragtui.quotes import misquotes

CollectionState = Literal["empty", "ready", "ingesting", "needs embeddings", "interrupted", "damaged"]


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
    text_entropy: float = 0.0   # bits per byte of the text in its file's encoding (RAGWeed 2c)
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
        """`collection/file [p.PAGE]`, as sources are named to the LLM and the user (RAGWeed 5)."""
        page = f" [p.{self.meta.page}]" if self.meta.page else ""
        return f"{self.meta.collection}/{self.meta.source}{page}"


class AnnotationState(StrEnum):
    PENDING = "pending"  # not annotated (yet, or a cancel cut it): listed as relevant, sent to synthesis (RAGWeed)
    RUNNING = "running"
    RELEVANT = "relevant"
    IRRELEVANT = "irrelevant"
    FAILED = "failed"
    OFF = "off"          # annotation disabled: every source goes to synthesis


class Override(StrEnum):
    NONE = ""
    RESCUED = "rescued"  # a filtered source the user put back into the synthesis set
    DROPPED = "dropped"  # a relevant source the user took out


class StopReason(StrEnum):
    """Why the answer stopped; the values are what history and `ask --json` store."""

    NONE = ""                         # no answer finished yet
    STOP = "stop"
    LENGTH = "length"                 # cut at llm.max_tokens: Continue is on offer
    CANCELLED = "cancelled"           # the user (or a closed stream) cut it; the partial text stays
    ERROR = "error"
    CONTENT_FILTER = "content_filter"  # an OpenAI-compatible server withheld the rest

    @classmethod
    def parse(cls, value: str) -> StopReason:
        """A provider's or a stored reason; one this model does not know still means the answer ended."""
        try:
            return cls(value)
        except ValueError:
            return cls.STOP


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


@dataclass(frozen=True)
class SessionSource:
    """A retrieved chunk inside a research session, as it stands at one moment."""

    number: int                      # the [N] the user and the LLM see (1-based, by rank)
    chunk: Chunk
    score: float                     # fused score (RAGWeed 3d) or RRF score
    rel_score: float                 # relative score in [0, 1] (RAGWeed 3f)
    legs: tuple[str, ...]            # which legs found it: "vector", "keyword"
    state: AnnotationState = AnnotationState.PENDING
    annotation: str = ""
    error: str = ""
    override: Override = Override.NONE
    annotated_by: str = ""           # the model that wrote `annotation`
    annotation_prompt: str = ""      # the prompt file it used; "" for the built-in RAGWeed 4a prompt
    evidence: tuple[LegRank, ...] = ()   # its rank and score in each leg (the "why this source" view)
    neighbor_of: int = 0             # a neighbour chunk added for context: the [N] of the hit it neighbours
    distance: int = 0                # how many chunks away from that hit

    @property
    def rerank_score(self) -> float | None:
        """The reranker's relevance score ([rerank]), kept in `evidence`; None when it did not score this one."""
        return leg_score(self.evidence, "rerank")

    @property
    def misquoted(self) -> tuple[str, ...]:
        """What the annotation quotes that this chunk does not say (`quotes.misquotes`): not a real quote."""
        return misquotes(self.annotation, self.chunk.text) if self.annotation else ()

    @property
    def verdict_relevant(self) -> bool:
        """The model's verdict before any override by the user; a source without one (annotation off, not
        annotated yet, or cancelled before its annotation finished) counts as relevant, as in RAGWeed."""
        return self.state not in (AnnotationState.IRRELEVANT, AnnotationState.FAILED)

    @property
    def relevant(self) -> bool:
        """Whether synthesis uses it: the model's verdict, unless the user overrode it."""
        if self.override is Override.RESCUED:
            return True
        if self.override is Override.DROPPED:
            return False
        return self.verdict_relevant

    @property
    def filtered(self) -> bool:
        return (not self.relevant and self.state in (AnnotationState.IRRELEVANT, AnnotationState.FAILED)) \
            or self.override is Override.DROPPED
