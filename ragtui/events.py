"""Everything the engine reports, one type per thing that happens.

The engine yields these from async iterators; the CLI prints them and the TUI
renders them. Nothing here knows about either front end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ragtui.chunks import Chunk


class AnnotationState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    RELEVANT = "relevant"
    IRRELEVANT = "irrelevant"
    FAILED = "failed"
    OFF = "off"          # annotation disabled: every source goes to synthesis


class Override(StrEnum):
    NONE = ""
    RESCUED = "rescued"  # a filtered source the user put back into the synthesis set
    DROPPED = "dropped"  # a relevant source the user took out


@dataclass
class Source:
    """A retrieved chunk inside a research session."""

    number: int                      # the [N] the user and the LLM see (1-based, by rank)
    chunk: Chunk
    score: float                     # fused score (RAGWeed 3d) or RRF score
    rel_score: float                 # relative score in [0, 1] (RAGWeed 3f)
    legs: tuple[str, ...]            # which legs found it: "vector", "keyword"
    state: AnnotationState = AnnotationState.PENDING
    annotation: str = ""
    error: str = ""
    override: Override = Override.NONE

    @property
    def relevant(self) -> bool:
        """Whether synthesis uses it: the model's verdict, unless the user overrode it."""
        if self.override is Override.RESCUED:
            return True
        if self.override is Override.DROPPED:
            return False
        return self.state in (AnnotationState.RELEVANT, AnnotationState.OFF)

    @property
    def filtered(self) -> bool:
        return (not self.relevant and self.state in (AnnotationState.IRRELEVANT, AnnotationState.FAILED)) \
            or self.override is Override.DROPPED


@dataclass(frozen=True)
class Event:
    pass


# --- ingest -------------------------------------------------------------------

@dataclass(frozen=True)
class IngestProgress(Event):
    collection: str
    files_done: int
    files_total: int
    chunks: int
    embedded: int
    embed_rate: float                # embeddings per second over the last stretch
    eta_s: float | None
    current: str = ""


@dataclass(frozen=True)
class FileSkipped(Event):
    collection: str
    source: str
    reason: str


@dataclass(frozen=True)
class IngestFinished(Event):
    collection: str
    report: Any                      # ragtui.ingest.report.IngestReport


# --- research -------------------------------------------------------------------

@dataclass(frozen=True)
class Notice(Event):
    """Something degraded or noteworthy the user must see (never silent)."""

    level: str                       # "info" | "warning" | "error"
    message: str


@dataclass(frozen=True)
class RetrievalStarted(Event):
    query: str
    collections: tuple[str, ...]


@dataclass(frozen=True)
class SourcesReady(Event):
    sources: list[Source]
    meta: dict[str, Any]             # retrieval_meta: per collection tier, words, IDF, synonyms, timings
    keyword_only: bool = False


@dataclass(frozen=True)
class AnnotationStarted(Event):
    number: int


@dataclass(frozen=True)
class AnnotationFinished(Event):
    number: int
    text: str
    relevant: bool


@dataclass(frozen=True)
class AnnotationFailed(Event):
    number: int
    error: str


@dataclass(frozen=True)
class SynthesisStarted(Event):
    model: str
    numbers: tuple[int, ...]         # the sources in the prompt
    continuation: bool = False


@dataclass(frozen=True)
class SynthesisToken(Event):
    text: str


@dataclass(frozen=True)
class SynthesisFinished(Event):
    text: str                        # the whole answer so far, continuations joined
    stop_reason: str                 # "stop" | "length" | "cancelled" | "error"
    citations: tuple[int, ...] = ()
    unknown_citations: tuple[int, ...] = ()


@dataclass(frozen=True)
class StageFailed(Event):
    stage: str                       # "retrieve" | "annotate" | "synthesize"
    message: str


@dataclass(frozen=True)
class SessionSaved(Event):
    session_id: int
    timings: dict[str, float] = field(default_factory=dict)
