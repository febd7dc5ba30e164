"""A research conversation: its turns, each turn's sources, and how a source's annotation state changes.

Everything here is frozen. The research session replaces a source, a turn or the
whole `Conversation` when something changes, so whatever an event or a front end
was handed keeps the values it had. The functions under "transitions" are the one
place where a source's annotation state and override change; the session applies
them and the events carry their result.

Source numbers continue across the turns of a conversation ([1]-[8] in turn 1,
[9]-... in turn 2), so a citation [N] names one source in the whole conversation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from ragtui.echo import is_echo, says_nothing
from ragtui.model.chunks import Chunk, LegRank, leg_score
from ragtui.model.research_run import ResearchRun
from ragtui.model.retrieval import RetrievalMeta
from ragtui.quotes import found_quotes, misquotes, occurs, quoteless
from ragtui.sanitize import clean, one_line


class AnnotationState(StrEnum):
    PENDING = "pending"  # not annotated (yet, or a cancel cut it): listed as relevant, sent to synthesis
    RUNNING = "running"
    RELEVANT = "relevant"
    IRRELEVANT = "irrelevant"
    FAILED = "failed"
    OFF = "off"          # annotation disabled: every source goes to synthesis


# The model's verdicts that keep a source out of the synthesis set unless the user rescues it.
FILTERING_STATES = (AnnotationState.IRRELEVANT, AnnotationState.FAILED)
# An annotation pass that did not reach the source (yet): a cancel puts back what it had before.
UNFINISHED_STATES = (AnnotationState.PENDING, AnnotationState.RUNNING)


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
    REPETITION = "repetition"         # looping: stopped when it began, or found at the llm.max_tokens cut (two
    #                                   copies of a long passage); not continued (it would loop again)

    @classmethod
    def parse(cls, value: str) -> StopReason:
        """A provider's or a stored reason; one this model does not know still means the answer ended."""
        try:
            return cls(value)
        except ValueError:
            return cls.STOP


class Standing(StrEnum):
    """Where a source stands for the reader, the user's override first: each front end words these its own way
    (the sources pane, `ragtui ask`, the Markdown export), all from this one rule."""

    RESCUED = "rescued"
    DROPPED = "dropped"
    RELEVANT = "relevant"
    NO_QUOTE = "no quote"             # judged relevant, but its annotation quotes nothing this source says
    IRRELEVANT = "irrelevant"
    FAILED = "failed"
    RUNNING = "running"
    NOT_ANNOTATED = "not annotated"   # pending: not annotated yet, or a cancel cut its annotation
    OFF = "off"                       # annotation was off


@dataclass(frozen=True)
class SessionSource:
    """A retrieved chunk inside a research session, as it stands at one moment."""

    number: int                      # the [N] the user and the LLM see (1-based, by rank)
    chunk: Chunk
    score: float                     # fused score or RRF score
    rel_score: float                 # relative score in [0, 1]
    legs: tuple[str, ...]            # which legs found it: "vector", "keyword"
    state: AnnotationState = AnnotationState.PENDING
    annotation: str = ""
    error: str = ""
    override: Override = Override.NONE
    annotated_by: str = ""           # the model that wrote `annotation`
    annotation_prompt: str = ""      # the prompt file it used; "" for the built-in prompt
    evidence: tuple[LegRank, ...] = ()   # its rank and score in each leg (the "why this source" view)
    neighbor_of: int = 0             # a neighbour chunk added for context: the [N] of the hit it neighbours
    distance: int = 0                # how many chunks away from that hit
    quoteless: bool = False          # judged relevant with no quote its chunk holds (`quotes.quoteless`)

    @property
    def rerank_score(self) -> float | None:
        """The reranker's relevance score ([rerank]), kept in `evidence`; None when it did not score this one."""
        return leg_score(self.evidence, "rerank")

    @property
    def misquoted(self) -> tuple[str, ...]:
        """What the annotation quotes that this chunk does not say (`quotes.misquotes`): not a real quote."""
        return misquotes(self.annotation, self.chunk.text) if self.annotation else ()

    @property
    def unquoted(self) -> bool:
        """Judged relevant (now) by an annotation that quotes nothing of it: a verdict without evidence."""
        return self.quoteless and self.state is AnnotationState.RELEVANT

    @property
    def quote(self) -> str:
        """The annotation's longest quote of this chunk (`quotes.found_quotes`); "" when it quotes none."""
        if not self.annotation:
            return ""
        return max(found_quotes(self.annotation, self.chunk.text), key=len, default="")

    @property
    def quote_page(self) -> str:
        """The page the annotation's longest quote of this chunk lies on, when the chunk runs over a page break
        and the quote does not; "" otherwise."""
        if not self.annotation or not self.chunk.meta.breaks():
            return ""
        quoted = self.quote
        return self.chunk.meta.page_of(self.chunk.text, lambda part: occurs(quoted, part)) if quoted else ""

    @property
    def verdict_relevant(self) -> bool:
        """The model's verdict before any override by the user; a source without one (annotation off, not
        annotated yet, or cancelled before its annotation finished) counts as relevant."""
        return self.state not in FILTERING_STATES

    @property
    def relevant(self) -> bool:
        """Whether synthesis uses it: the model's verdict, unless the user overrode it."""
        if self.override is Override.RESCUED:
            return True
        if self.override is Override.DROPPED:
            return False
        return self.verdict_relevant

    @property
    def kept(self) -> bool:
        """Relevant by a finished verdict: annotated relevant, not annotated because annotation is off, or
        rescued; a source whose annotation has not run (a cancelled search) is not kept by a research run."""
        return self.relevant and (self.state not in UNFINISHED_STATES or self.override is Override.RESCUED)

    @property
    def filtered(self) -> bool:
        return (not self.relevant and self.state in FILTERING_STATES) or self.override is Override.DROPPED

    def to_json(self) -> dict[str, Any]:
        """The one JSON shape of a source (`ask --json`, the MCP server's ask): its chunk's place, how it was
        found and judged. Text is made inert (`sanitize.clean`) and names kept on one line: an agent's client
        or a terminal may show them."""
        meta = self.chunk.meta
        return {
            "number": self.number, "collection": one_line(meta.collection), "chunk_id": self.chunk.id,
            "source": one_line(meta.source), "label": one_line(self.chunk.label), "page": one_line(meta.page),
            "page_last": one_line(meta.last_page), "quote_page": one_line(self.quote_page),
            "heading": one_line(meta.heading), "file_hash": meta.file_hash, "score": self.score,
            "rel_score": self.rel_score,
            "legs": list(self.legs), "state": self.state.value, "override": self.override.value,
            "relevant": self.relevant, "annotation": clean(self.annotation),
            "annotated_by": one_line(self.annotated_by), "annotation_prompt": one_line(self.annotation_prompt),
            "neighbor_of": self.neighbor_of, "distance": self.distance,
            "evidence": [{"leg": e.leg, "rank": e.rank, "score": e.score} for e in self.evidence],
            "misquoted": [clean(q) for q in self.misquoted], "quoteless": self.quoteless, "error": clean(self.error),
        }

    @property
    def standing(self) -> Standing:
        if self.override is Override.RESCUED:
            return Standing.RESCUED
        if self.override is Override.DROPPED:
            return Standing.DROPPED
        if self.unquoted:
            return Standing.NO_QUOTE
        return _STANDING[self.state]


def by_evidence(sources: Iterable[SessionSource]) -> list[SessionSource]:
    """Sources in the order a reader and the answer's packing take them: by number (their retrieval rank),
    except that a relevant source whose annotation quotes nothing of it (`SessionSource.unquoted`: a verdict
    without evidence) goes one place down, behind the next source that is not unquoted, and only when another
    such source follows that one: "no quote" lowers a source a little, never behind every source with a quote.
    The mark is often wrong (a model's quote may be mangled, or a true quote of a title too thin to show), and
    the retrieval's best source is often the answer's best evidence, so the mark must not cost it its place in
    a prompt that holds only the first few sources."""
    ordered = sorted(sources, key=lambda s: s.number)
    firm = [i for i, s in enumerate(ordered) if not s.unquoted]

    def place(i: int, source: SessionSource) -> tuple[float, int]:
        after = [f for f in firm if f > i]
        return (after[0] + 0.5 if source.unquoted and len(after) > 1 else i, i)
    return [s for _, s in sorted(((place(i, s), s) for i, s in enumerate(ordered)), key=lambda pair: pair[0])]


_STANDING = {AnnotationState.PENDING: Standing.NOT_ANNOTATED, AnnotationState.RUNNING: Standing.RUNNING,
             AnnotationState.RELEVANT: Standing.RELEVANT, AnnotationState.IRRELEVANT: Standing.IRRELEVANT,
             AnnotationState.FAILED: Standing.FAILED, AnnotationState.OFF: Standing.OFF}


ANNOTATION_CONTEXT_TURNS = 2       # earlier questions an annotation of a follow-up's sources is told
ANNOTATION_CONTEXT_CHARS = 300


def _clipped(question: str) -> str:
    return question if len(question) <= ANNOTATION_CONTEXT_CHARS else question[:ANNOTATION_CONTEXT_CHARS - 1] + "…"


# --- transitions: the one place a source's annotation state and override change ----------------------------

def queued(source: SessionSource) -> SessionSource:
    """About to be annotated: its earlier error goes, its earlier annotation stays until a new one replaces it."""
    return dataclasses.replace(source, state=AnnotationState.PENDING, error="")


def annotating(source: SessionSource) -> SessionSource:
    return dataclasses.replace(source, state=AnnotationState.RUNNING)


def annotated(source: SessionSource, text: str, *, relevant: bool, by: str, prompt: str) -> SessionSource:
    """The model's verdict and its text, recorded with the model and prompt file that wrote them; a relevant
    verdict that quotes nothing of the source is marked `quoteless`. An override the new verdict agrees with is
    no longer one (a rescued source now judged relevant is simply relevant)."""
    judged = dataclasses.replace(source, state=AnnotationState.RELEVANT if relevant else AnnotationState.IRRELEVANT,
                                 annotation=text, error="", annotated_by=by, annotation_prompt=prompt,
                                 quoteless=relevant and quoteless(text, source.chunk.text))
    return dataclasses.replace(judged, override=_settled(judged))


def annotation_failed(source: SessionSource, error: str) -> SessionSource:
    return dataclasses.replace(source, state=AnnotationState.FAILED, error=error)


def cut(source: SessionSource, before: SessionSource) -> SessionSource:
    """After a cancelled annotation pass: a source the pass did not finish is as it was before the pass."""
    return before if source.state in UNFINISHED_STATES else source


def rescued(source: SessionSource) -> SessionSource:
    """Put back into the synthesis set (no override needed when the model's verdict already does)."""
    return dataclasses.replace(source, override=Override.NONE if source.verdict_relevant else Override.RESCUED)


def dropped(source: SessionSource) -> SessionSource:
    """Taken out of the synthesis set (no override needed when the model's verdict already does)."""
    return dataclasses.replace(source, override=Override.DROPPED if source.verdict_relevant else Override.NONE)


def _settled(source: SessionSource) -> Override:
    if (source.override is Override.RESCUED and source.verdict_relevant) or \
            (source.override is Override.DROPPED and not source.verdict_relevant):
        return Override.NONE
    return source.override


# --- the conversation ---------------------------------------------------------------------------------------

def _frozen_map(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return value if isinstance(value, MappingProxyType) else MappingProxyType(dict(value))


# How an answer ended when it is done and worth checking: not cancelled by the user, not failed, not running.
FINISHED_REASONS = (StopReason.STOP, StopReason.LENGTH, StopReason.REPETITION, StopReason.CONTENT_FILTER)


def answer_uncited(answer: str, stop_reason: StopReason, citations: tuple[int, ...]) -> bool:
    """Whether a finished answer cites nothing: no [N] at all, so no sentence of it can be checked against a
    source. A cancelled or failed answer is not judged (it may have stopped before its first citation)."""
    return bool(answer.strip()) and not citations and stop_reason in FINISHED_REASONS


@dataclass(frozen=True)
class Turn:
    """One question of a conversation and everything that answered it.

    A follow-up turn retrieves twice, on the question as typed and on `rewrite`, a
    standalone question the LLM wrote from the conversation (or the user gave:
    `rewrite_by` is then "user"); `rewrite_meta` is the second run's retrieval_meta.
    Sequences given as lists are kept as tuples, mappings as read-only views.
    """

    query: str
    rewrite: str = ""
    rewrite_by: str = ""                            # the model that wrote it, "user", or "" (no rewrite)
    retrieval_meta: RetrievalMeta | None = None     # None until retrieval ran (stored as {})
    rewrite_meta: RetrievalMeta | None = None
    keyword_only: bool = False
    sources: tuple[SessionSource, ...] = ()
    answer: str = ""
    stop_reason: StopReason = StopReason.NONE
    continuations: int = 0
    prompt: tuple[tuple[str, str], ...] = ()
    prompt_numbers: tuple[int, ...] = ()            # the last prompt's sources; other citations are flagged
    context_turns: tuple[int, ...] = ()             # earlier turns (1-based) the prompt carried
    citations: tuple[int, ...] = ()
    unknown_citations: tuple[int, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)    # seconds per stage
    error: str = ""

    def __post_init__(self) -> None:
        for name in ("sources", "prompt_numbers", "context_turns", "citations", "unknown_citations"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "prompt", tuple((role, text) for role, text in self.prompt))
        object.__setattr__(self, "timings", _frozen_map(self.timings))

    @property
    def relevant(self) -> tuple[SessionSource, ...]:
        return tuple(s for s in self.sources if s.relevant)

    @property
    def truncated(self) -> bool:
        """The answer stopped for length: Continue is on offer."""
        return self.stop_reason is StopReason.LENGTH

    @property
    def uncited(self) -> bool:
        """A finished answer that cites no source [N] at all (`answer_uncited`)."""
        return answer_uncited(self.answer, self.stop_reason, self.citations)

    @property
    def echo(self) -> bool:
        """A finished answer that is mostly text copied from its prompt's frame (source headers, fenced text,
        the question: `echo.is_echo`); the citations inside such a copy are not counted as `citations`."""
        return self.stop_reason in FINISHED_REASONS and is_echo(self.answer, [text for _, text in self.prompt])

    @property
    def non_answer(self) -> bool:
        """A finished answer that cites sources and says nothing they say (`echo.says_nothing`): "The source is
        [1] and the other two are [2] and [3]." An echo is not also a non-answer."""
        if self.stop_reason not in FINISHED_REASONS or not self.citations or not self.prompt_numbers or self.echo:
            return False
        given = set(self.prompt_numbers)
        texts = [s.chunk.text for s in self.sources if s.number in given]
        # a research run's report holds no sources of its own: the texts it was given are in its prompt
        return says_nothing(self.answer, texts or [text for role, text in self.prompt if role == "user"])

    @property
    def failed_checks(self) -> tuple[str, ...]:
        """The codes of the checks a finished answer failed (`--json`'s "warnings", the MCP server's): "echo",
        "non_answer", "no_citations"."""
        return tuple(code for code, failed in (("echo", self.echo), ("non_answer", self.non_answer),
                                               ("no_citations", self.uncited)) if failed)

    @property
    def can_continue(self) -> bool:
        """A partial answer (cut for length, or cancelled) that Continue can extend (`continue_refusal`)."""
        return not self.continue_refusal

    @property
    def continue_refusal(self) -> str:
        """Why Continue cannot extend this answer, "" when it can: the one continue rule, which the engine, the
        TUI's continue key and `ragtui ask --continue` all follow.

        An answer cut at llm.max_tokens continues. So does a cancelled one: its text is what the model wrote
        before the cancel, and asking for the rest goes on from there, as after a cut. An answer stopped for
        repeating itself does not (the model would loop again), nor does a failed one (a dropped stream's text
        is kept but not asked for again: the server would write it twice), nor one the server withheld, nor a
        complete one.
        """
        reason = self.stop_reason
        if reason is StopReason.REPETITION:
            return ("the answer was stopped because it repeated itself: continuing it would loop again; "
                    "synthesize again for a fresh answer")
        if not self.answer.strip() or not self.prompt:
            return "there is no answer to continue yet"
        if reason in (StopReason.LENGTH, StopReason.CANCELLED):
            return ""
        if reason is StopReason.ERROR:
            return "the answer failed: continuing it would ask for text already written; synthesize again"
        if reason is StopReason.CONTENT_FILTER:
            return "the server withheld the rest of the answer (content filter): it would withhold it again"
        if reason is StopReason.NONE:
            return "the answer never finished (its run stopped without a stop reason): synthesize again"
        return "the answer is complete: nothing to continue"

    def timed(self, stage: str, seconds: float) -> Turn:
        """This turn with `seconds` added to the stage's time."""
        return dataclasses.replace(self, timings={**self.timings, stage: self.timings.get(stage, 0.0) + seconds})


@dataclass(frozen=True)
class Conversation:
    """A research session as it stands: its settings and its turns; everything it needs to be shown, exported or
    reopened."""

    collections: tuple[str, ...]
    config: Mapping[str, Any]
    synthesis_model: str
    annotation_model: str
    annotation_on: bool = True
    id: int | None = None
    created_at: str = ""
    updated_at: str = ""
    turns: tuple[Turn, ...] = ()
    research: ResearchRun | None = None      # a research run's plan, rounds and cost; None for a conversation

    def __post_init__(self) -> None:
        object.__setattr__(self, "collections", tuple(self.collections))
        object.__setattr__(self, "turns", tuple(self.turns))
        object.__setattr__(self, "config", _frozen_map(self.config))

    @property
    def query(self) -> str:
        """The conversation's first question (a research run's question): its title in lists and exports."""
        if self.research is not None:
            return self.research.question
        return self.turns[0].query if self.turns else ""

    @property
    def turn(self) -> Turn:
        """The latest turn, the one follow-ups, re-annotation and synthesis work on."""
        return self.turns[-1]

    @property
    def all_sources(self) -> tuple[SessionSource, ...]:
        """Every turn's sources, in number order (a turn's own are `Turn.sources`)."""
        return tuple(s for t in self.turns for s in t.sources)

    def next_number(self) -> int:
        return max((s.number for s in self.all_sources), default=0) + 1

    def annotation_query(self, number: int) -> str:
        """What the sources of turn `number` (1-based) are judged against: the question as typed, and for a
        follow-up the questions before it (at most ANNOTATION_CONTEXT_TURNS, each at most
        ANNOTATION_CONTEXT_CHARS) and its standalone rewrite; never the rewrite alone, which may have gone
        wrong where the typed words have not. A research run's search is judged against its own query within
        the run's question."""
        turn = self.turns[number - 1]
        if self.research is not None:         # a search of a research run: its sub-question, within the whole
            return f'{turn.query} (part of: "{_clipped(self.research.question)}")'
        earlier = [_clipped(t.query) for t in self.turns[max(0, number - 1 - ANNOTATION_CONTEXT_TURNS):number - 1]]
        if not earlier:
            return turn.query
        context = "; ".join(f'"{q}"' for q in earlier)
        read_as = f'; read as: "{_clipped(turn.rewrite)}"' if turn.rewrite and turn.rewrite != turn.query else ""
        return f"{turn.query} (a follow-up to {context}{read_as})"

    @property
    def is_report(self) -> bool:
        """The latest turn is a research run's report."""
        return self.research is not None and self.research.report_turn == len(self.turns)

    @property
    def answer_sources(self) -> tuple[SessionSource, ...]:
        """The sources an answer to the latest turn is written from: its own relevant ones; for a research run's
        report, every search's kept ones (`SessionSource.kept`)."""
        if self.is_report:
            return tuple(s for t in self.turns[:-1] for s in t.sources if s.kept)
        return self.turn.relevant

    def source(self, number: int) -> SessionSource:
        """Source [number] of any turn; KeyError naming the numbers there are."""
        return self.turns[self.turn_of(number) - 1].sources[self._position(number)[1]]

    def turn_of(self, number: int) -> int:
        """The 1-based turn that source [number] belongs to."""
        return self._position(number)[0] + 1

    def _position(self, number: int) -> tuple[int, int]:
        for t, turn in enumerate(self.turns):
            for i, s in enumerate(turn.sources):
                if s.number == number:
                    return t, i
        numbers = [s.number for s in self.all_sources]
        have = f"[{numbers[0]}]-[{numbers[-1]}]" if numbers else "none"
        raise KeyError(f"no source [{number}] in this session (its sources: {have})")

    # --- changed copies -----------------------------------------------------------------

    def with_turn(self, turn: Turn) -> Conversation:
        """The latest turn replaced."""
        return dataclasses.replace(self, turns=(*self.turns[:-1], turn))

    def with_source(self, source: SessionSource) -> Conversation:
        """The source with `source.number` replaced, in whichever turn holds it."""
        t, i = self._position(source.number)
        turn = self.turns[t]
        changed = dataclasses.replace(turn, sources=(*turn.sources[:i], source, *turn.sources[i + 1:]))
        return dataclasses.replace(self, turns=(*self.turns[:t], changed, *self.turns[t + 1:]))


@dataclass(frozen=True)
class SessionSummary:
    """One stored session as the history lists it."""

    id: int
    created_at: str
    query: str
    collections: tuple[str, ...]
    stop_reason: StopReason
    sources: int
    relevant: int
    turns: int = 1
