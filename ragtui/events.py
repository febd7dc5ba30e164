"""Everything the engine reports, one type per thing that happens.

The engine yields these from async iterators; the CLI prints them and the TUI
renders them. Nothing here knows about either front end, and nothing here imports
more of ragtui than its nouns (ragtui.model). Every event is frozen and carries the
snapshot it reports (a source as it now stands, a finished ingest's report), so a
front end shows what it received and never rebuilds it, and what it received
never changes under it as the session goes on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from ragtui.model.collection import IngestReport
from ragtui.model.conversation import AnnotationState, SessionSource, StopReason, answer_uncited
from ragtui.model.research_run import Limit, ResearchRun, SubQuestion
from ragtui.model.retrieval import RetrievalMeta
from ragtui.numbers import NumberCheck
from ragtui.quotes import QuoteCheck

NoticeLevel = Literal["info", "warning", "error"]
Stage = Literal["retrieve", "annotate", "synthesize"]


@dataclass(frozen=True)
class Event:
    pass


# --- ingest -------------------------------------------------------------------

@dataclass(frozen=True)
class IngestProgress(Event):
    files_done: int
    files_total: int
    chunks: int                      # chunks of the files done so far, those of unchanged files included
    embedded: int
    embed_rate: float                # embeddings per second over the last stretch
    eta_s: float | None
    current: str = ""


@dataclass(frozen=True)
class FileSkipped(Event):
    source: str
    reason: str


@dataclass(frozen=True)
class IngestFinished(Event):
    collection: str
    report: IngestReport


# --- research -------------------------------------------------------------------

@dataclass(frozen=True)
class Notice(Event):
    """Something degraded or noteworthy the user must see (never silent)."""

    level: NoticeLevel
    message: str


@dataclass(frozen=True)
class RetrievalStarted(Event):
    collections: tuple[str, ...]


@dataclass(frozen=True)
class RewriteReady(Event):
    """A follow-up's standalone rewrite, retrieved on next to the question as typed."""

    question: str
    rewrite: str
    by: str                          # the model that wrote it, or "user"


@dataclass(frozen=True)
class SourcesReady(Event):
    sources: tuple[SessionSource, ...]
    meta: RetrievalMeta
    keyword_only: bool = False
    turn: int = 1                    # which turn of the conversation these sources answer


@dataclass(frozen=True)
class SourceChanged(Event):
    """A source whose annotation state changed, as it now stands (the session's only copy is replaced too)."""

    source: SessionSource

    @property
    def number(self) -> int:
        return self.source.number


@dataclass(frozen=True)
class AnnotationStarted(SourceChanged):
    pass


@dataclass(frozen=True)
class AnnotationFinished(SourceChanged):
    """The source with its new annotation, verdict, annotating model and prompt (and an override its verdict
    settled)."""

    @property
    def text(self) -> str:
        return self.source.annotation

    @property
    def relevant(self) -> bool:
        """The model's verdict (before any override by the user)."""
        return self.source.state is AnnotationState.RELEVANT


@dataclass(frozen=True)
class AnnotationFailed(SourceChanged):
    @property
    def error(self) -> str:
        return self.source.error


@dataclass(frozen=True)
class SynthesisStarted(Event):
    model: str
    numbers: tuple[int, ...]         # the sources in the prompt
    continuation: bool = False
    windowed: tuple[int, ...] = ()   # of those, the ones sent as their most relevant part
    left_out: tuple[int, ...] = ()   # relevant sources that did not fit the context window


@dataclass(frozen=True)
class SynthesisToken(Event):
    text: str


@dataclass(frozen=True)
class SynthesisFinished(Event):
    text: str                        # the whole answer so far, continuations joined
    stop_reason: StopReason
    citations: tuple[int, ...] = ()
    unknown_citations: tuple[int, ...] = ()
    quotes: tuple[QuoteCheck, ...] = ()   # the answer's attributed quotes, each checked against the sources
    echo: bool = False               # mostly text copied from the prompt's frame (`Turn.echo`)
    non_answer: bool = False         # cites sources and says nothing they say (`Turn.non_answer`)
    numbers: tuple[NumberCheck, ...] = ()   # the numbers the answer states that its cited sources do not hold

    @property
    def unverified(self) -> tuple[QuoteCheck, ...]:
        return tuple(q for q in self.quotes if not q.verified)

    @property
    def uncited(self) -> bool:
        """The answer cites no source [N] at all (`ragtui.model.conversation.answer_uncited`)."""
        return answer_uncited(self.text, self.stop_reason, self.citations)


@dataclass(frozen=True)
class StageFailed(Event):
    stage: Stage
    message: str


@dataclass(frozen=True)
class SessionSaved(Event):
    """A stage finished and the session's record is in the history, or, with `not_saved`, why it is not
    (a damaged history file: the session then lives in this process only)."""

    session_id: int
    timings: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))   # seconds per stage
    not_saved: str = ""


# --- a research run -------------------------------------------------------------

@dataclass(frozen=True)
class PlanReady(Event):
    """The sub-questions the run will gather evidence for; `by` the model that wrote them, or "fragments" when
    its reply could not be used (`why` says what was wrong with it)."""

    plan: tuple[SubQuestion, ...]
    by: str
    why: str = ""


@dataclass(frozen=True)
class SubQuestionChanged(Event):
    """Sub-question `index` (0-based) as it now stands: searching, annotating n/m, k sources kept, done."""

    index: int
    sub: SubQuestion


@dataclass(frozen=True)
class RoundStarted(Event):
    """A round of searches begins: 1 for the plan's, then each gap round, for the sub-questions `parts`
    (0-based) with the searches `queries`."""

    round: int
    parts: tuple[int, ...]
    queries: tuple[str, ...]


@dataclass(frozen=True)
class LimitReached(Event):
    """A limit of [research] stopped the gathering (said once per run and limit)."""

    limit: Limit
    message: str


@dataclass(frozen=True)
class ResearchFinished(Event):
    """The run as it ended: its plan's states, rounds, limits reached and cost."""

    run: ResearchRun
