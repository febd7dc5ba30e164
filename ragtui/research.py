"""A research session: retrieve -> annotate -> synthesize, as async iterators of events.

The CLI and the TUI drive the same object and only render what it yields
(ragtui.events). No UI code here. The public shape:

    session = ResearchSession(settings, query, collections, *, history=..., retrieve=...)  # Workspace.new_session
    session.id, .query, .collections, .sources: tuple[SessionSource, ...], .answer: str,
    .stop_reason: StopReason, .meta: RetrievalMeta | None, .truncated (stop_reason == "length"),
    .can_continue (cut for length, or cancelled with partial text),
    .continuations, .citations, .unknown_citations, .timings, .relevant

    async for event in session.run(): ...          # retrieve, annotate (if on), synthesize, save
    async for event in session.reannotate(numbers=None, *, model=None, prompt_file=None): ...
    async for event in session.synthesize(): ...   # again, from the current Relevant set
    async for event in session.continue_answer(): ...   # after a "length" stop (or a cancelled answer)
    session.rescue(number); session.drop(number)   # move a source into / out of the synthesis set
    session = ResearchSession.reopen(settings, session_id, *, history=..., retrieve=...)  # Workspace.reopen
    session.save()

The Workspace injects both collaborators: `history`, the HistoryStore that saves
the session, and `retrieve`, an async callable `(query, collection names) -> Retrieval`
(Workspace.retrieve; tests pass a fixed one).

Cancelling the consuming task, or closing an iterator, stops the LLM stream at once
and leaves the history record consistent: a cut answer keeps its partial text with
stop_reason "cancelled"; annotations still running are marked failed ("cancelled").

Sources are frozen: the session replaces one (`_update`) when its state changes, so
the sources an event carried keep the values they had when it was yielded.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ragtui.config import ConfigError, Settings
from ragtui.errors import describe
from ragtui.events import (
    AnnotationFailed,
    AnnotationFinished,
    AnnotationStarted,
    Event,
    Notice,
    RetrievalStarted,
    SessionSaved,
    SourcesReady,
    Stage,
    StageFailed,
    SynthesisFinished,
    SynthesisStarted,
    SynthesisToken,
)
from ragtui.history import HistoryStore, SessionRecord
from ragtui.llm.chat import ChatModel, LLMError
from ragtui.llm.synthesize import Plan
from ragtui.model import AnnotationState, Override, SessionSource, StopReason
from ragtui.retrieve.result import Retrieval, RetrievalMeta

RetrieveFn = Callable[[str, Sequence[str]], Awaitable[Retrieval]]


def preload() -> None:
    """Import what a first session or ingest needs (seconds of llama_index/chromadb), so a front end can
    pay it in a background thread after its first frame instead of on its event loop."""
    import chromadb  # noqa: F401
    import llama_index.embeddings.ollama
    import llama_index.llms.ollama  # noqa: F401
    import whoosh.index  # noqa: F401
    import wn  # noqa: F401

    import ragtui.ingest.pipeline
    import ragtui.retrieve.hybrid
    import ragtui.retrieve.postprocess
    import ragtui.retrieve.retriever  # noqa: F401


class ResearchSession:
    """One question over some collections, with its sources, annotations, answer and history record."""

    def __init__(self, settings: Settings, query: str, collections: Sequence[str], *,
                 history: HistoryStore, retrieve: RetrieveFn) -> None:
        self.settings = settings
        self.history = history
        self._retrieve = retrieve
        self.record = SessionRecord(
            query=query, collections=list(collections), config=config_snapshot(settings),
            synthesis_model=settings.llm.model, annotation_model=settings.llm.annotator,
            annotation_on=settings.annotation.enabled)
        self._synthesis: ChatModel | None = None
        self._annotator: ChatModel | None = None
        self.packing: Plan | None = None      # the last synthesis prompt's packing (not kept in the history)

    # --- state ------------------------------------------------------------------

    @property
    def id(self) -> int | None:
        return self.record.id

    @property
    def query(self) -> str:
        return self.record.query

    @property
    def collections(self) -> list[str]:
        return self.record.collections

    @property
    def sources(self) -> tuple[SessionSource, ...]:
        return tuple(self.record.sources)

    @property
    def answer(self) -> str:
        return self.record.answer

    def use_in_answer(self, number: int) -> str | None:
        """How source `number` went into the last prompt: "whole", "window" (its most relevant part),
        "did not fit", or None (not in the synthesis set, or no prompt built in this process)."""
        if self.packing is None:
            return None
        if number in self.packing.windows:
            return "window"
        if any(s.number == number for s in self.packing.ordered):
            return "whole"
        return "did not fit" if any(s.number == number for s in self.packing.left_out) else None

    @property
    def stop_reason(self) -> StopReason:
        return self.record.stop_reason

    @property
    def meta(self) -> RetrievalMeta | None:
        """retrieval_meta; None until retrieval ran."""
        return self.record.retrieval_meta

    @property
    def timings(self) -> dict[str, float]:
        return self.record.timings

    @property
    def continuations(self) -> int:
        return self.record.continuations

    @property
    def citations(self) -> list[int]:
        return self.record.citations

    @property
    def unknown_citations(self) -> list[int]:
        return self.record.unknown_citations

    @property
    def truncated(self) -> bool:
        """The answer stopped for length: Continue is on offer."""
        return self.record.stop_reason is StopReason.LENGTH

    @property
    def can_continue(self) -> bool:
        """A partial answer (cut for length, or cancelled) that Continue can extend."""
        return self.record.stop_reason in (StopReason.LENGTH, StopReason.CANCELLED) \
            and bool(self.record.prompt and self.answer)

    @property
    def relevant(self) -> list[SessionSource]:
        return [s for s in self.sources if s.relevant]

    def source(self, number: int) -> SessionSource:
        return self.record.sources[self._index(number)]

    def _index(self, number: int) -> int:
        for i, s in enumerate(self.record.sources):
            if s.number == number:
                return i
        raise KeyError(f"no source [{number}] in this session (it has {len(self.record.sources)})")

    def _update(self, number: int, **changes: Any) -> SessionSource:
        """Replace source [number] with a copy holding `changes`; sources already handed out stay as they were."""
        i = self._index(number)
        source = self.record.sources[i] = dataclasses.replace(self.record.sources[i], **changes)
        return source

    def save(self) -> int:
        return self.history.save(self.record)

    @classmethod
    def reopen(cls, settings: Settings, session_id: int, *, history: HistoryStore,
               retrieve: RetrieveFn) -> ResearchSession:
        """A session rebuilt from its history record; re-annotate and continue work on it."""
        session = cls(settings, "", [], history=history, retrieve=retrieve)
        session.record = history.load(session_id)
        return session

    # --- the whole pipeline ---------------------------------------------------------

    async def run(self) -> AsyncGenerator[Event, None]:
        """Check the models, retrieve, annotate (when on), synthesize; save after each stage.

        When the LLM cannot be used (Ollama down, model missing, llm.model unset) the
        session still retrieves (keyword-only if the embedder is down too) and is saved
        with its sources; the LLM stage then fails with the reason, and a later
        re-annotate or synthesize on the reopened session picks up from there.
        """
        llm_problem = ""
        llm_stage: Stage = "synthesize"
        try:
            await self._model()
            if self.record.annotation_on:
                llm_stage = "annotate"
                self._annotator = await self._annotation_model(None)
        except (ConfigError, LLMError) as exc:
            llm_problem = str(exc)
        yield RetrievalStarted(tuple(self.collections))
        started = time.perf_counter()
        try:
            retrieval = await self._retrieve(self.query, self.collections)
        except Exception as exc:  # an unknown collection or a store failure: said, and the session kept
            yield self._fail("retrieve", describe(exc))
            return
        self.timings["retrieve_s"] = time.perf_counter() - started
        self.record.retrieval_meta = retrieval.meta
        self.record.keyword_only = retrieval.keyword_only
        self.record.sources = [
            SessionSource(number=i, chunk=hit.chunk, score=hit.score, rel_score=hit.rel_score, legs=tuple(hit.legs),
                          state=AnnotationState.PENDING if self.record.annotation_on and not llm_problem
                          else AnnotationState.OFF)
            for i, hit in enumerate(retrieval.hits, start=1)]
        self.save()
        yield SourcesReady(self.sources, retrieval.meta, retrieval.keyword_only)
        for notice in retrieval.notices:
            yield Notice("warning", notice)
        if not self.sources:
            yield Notice("warning", f"no sources found for {self.query!r} in {', '.join(self.collections)}; "
                                    "nothing to annotate or answer from")
            yield self._saved()
            return
        if llm_problem:
            yield self._fail(llm_stage, f"{llm_problem}. Sources only: no annotation and no answer.")
            return
        if self.record.annotation_on:
            async with aclosing(self._annotate([s.number for s in self.sources], model=None,
                                               prompt_file=None)) as events:
                async for event in events:
                    yield event
            if self.record.error:
                return
        async with aclosing(self.synthesize()) as events:
            async for event in events:
                yield event

    # --- annotation -----------------------------------------------------------------

    async def reannotate(self, numbers: Sequence[int] | None = None, *, model: str | None = None,
                         prompt_file: str | Path | None = None) -> AsyncGenerator[Event, None]:
        """Annotate some sources (all by default) again, optionally with another model or prompt file."""
        # an unknown number raises KeyError here, before any source changes
        targets = [self.source(n).number for n in numbers] if numbers is not None else [s.number for s in self.sources]
        self.record.annotation_on = True
        async with aclosing(self._annotate(targets, model=model, prompt_file=prompt_file)) as events:
            async for event in events:
                yield event
        yield self._saved()

    async def _annotate(self, targets: Sequence[int], *, model: str | None,
                        prompt_file: str | Path | None) -> AsyncGenerator[Event, None]:
        from ragtui.llm.annotate import annotate_sources, load_template

        try:
            template = load_template(self.settings.annotation.prompt_file if prompt_file is None else prompt_file)
            llm = await self._annotation_model(model)
        except (ConfigError, LLMError) as exc:
            yield self._fail("annotate", str(exc))     # earlier annotations stay as they were
            return
        texts = [(n, self._update(n, state=AnnotationState.PENDING, error="").chunk.text) for n in targets]
        started = time.perf_counter()
        calls = annotate_sources(llm, texts, query=self.query,
                                 template=template, pattern=self.settings.annotation.irrelevant_pattern,
                                 concurrency=self.settings.annotation.concurrency)
        try:
            async for event in calls:
                if isinstance(event, AnnotationStarted):
                    self._update(event.number, state=AnnotationState.RUNNING)
                elif isinstance(event, AnnotationFinished):
                    state = AnnotationState.RELEVANT if event.relevant else AnnotationState.IRRELEVANT
                    source = self._update(event.number, state=state, annotation=event.text, error="")
                    self.record.annotated_by[source.number] = llm.model
                    self._update(source.number, override=_settled(source))
                elif isinstance(event, AnnotationFailed):
                    self._update(event.number, state=AnnotationState.FAILED, error=event.error)
                yield event
        finally:
            await calls.aclose()
            for n in targets:
                if self.source(n).state in (AnnotationState.PENDING, AnnotationState.RUNNING):
                    self._update(n, state=AnnotationState.FAILED, error="cancelled before the annotation finished")
            self.timings["annotate_s"] = self.timings.get("annotate_s", 0.0) + time.perf_counter() - started
            if len(targets) == len(self.sources):
                self.record.annotation_model = llm.model
            if llm is not self._annotator:
                await llm.aclose()
            self.save()

    def rescue(self, number: int) -> SessionSource:
        """Put a filtered (or failed) source back into the synthesis set."""
        override = Override.NONE if self.source(number).verdict_relevant else Override.RESCUED
        source = self._update(number, override=override)
        self.save()
        return source

    def drop(self, number: int) -> SessionSource:
        """Take a source out of the synthesis set."""
        override = Override.DROPPED if self.source(number).verdict_relevant else Override.NONE
        source = self._update(number, override=override)
        self.save()
        return source

    async def _annotation_model(self, model: str | None) -> ChatModel:
        """The session's annotator, or a one-off one for another model."""
        from ragtui.llm.providers import annotation_model

        if model is None and self._annotator is not None:
            return self._annotator
        return await annotation_model(self.settings, model or self.record.annotation_model or None,
                                      synthesis_model_name=self.record.synthesis_model or None)

    async def aclose(self) -> None:
        """Close the HTTP clients of the models this session opened."""
        for llm in (self._annotator, self._synthesis):
            if llm is not None:
                await llm.aclose()
        self._annotator = self._synthesis = None

    # --- synthesis ------------------------------------------------------------------

    async def _model(self) -> ChatModel:
        if self._synthesis is None:
            from ragtui.llm.providers import synthesis_model

            self._synthesis = await synthesis_model(self.settings, self.record.synthesis_model or None)
            self.record.synthesis_model = self._synthesis.model
        return self._synthesis

    async def synthesize(self) -> AsyncGenerator[Event, None]:
        """A fresh answer from the current Relevant set (RAGWeed 5)."""
        from ragtui.llm.synthesize import build_messages, plan

        chosen = self.relevant
        if not chosen:
            failures = sum(s.state is AnnotationState.FAILED for s in self.sources)
            yield self._fail("synthesize", "no relevant sources to answer from"
                             + (f" ({failures} annotation(s) failed)" if failures else "")
                             + "; rescue a filtered source or re-annotate")
            return
        try:
            model = await self._model()
        except (ConfigError, LLMError) as exc:
            yield self._fail("synthesize", str(exc))
            return
        packed = plan(chosen, query=self.query, context_window=model.context_window,
                      max_tokens=self.settings.llm.max_tokens, context_chunks=self.settings.llm.context_chunks)
        self.packing = packed
        failed = [s.number for s in self.sources if s.state is AnnotationState.FAILED and not s.relevant]
        if failed:
            yield Notice("warning", f"left out {len(failed)} source(s) whose annotation failed: "
                                    f"{_numbers(failed)}; rescue them to include them")
        if packed.windows:
            yield Notice("info", f"{len(packed.windows)} source(s) too long for the room left were sent as their "
                                 f"most relevant part: {_numbers(sorted(packed.windows))}")
        if packed.left_out:
            yield Notice("warning", f"{len(packed.left_out)} relevant source(s) did not fit the context window "
                                    f"({model.context_window} tokens, llm.max_tokens {self.settings.llm.max_tokens},"
                                    f" llm.context_chunks {self.settings.llm.context_chunks}): "
                                    f"{_numbers([s.number for s in packed.left_out])}")
        if not packed.ordered:
            yield self._fail("synthesize", f"no source fits the context window of {model.context_window} tokens "
                                           f"with llm.max_tokens = {self.settings.llm.max_tokens}")
            return
        self.record.prompt = build_messages(self.query, packed.ordered)
        self.record.prompt_numbers = sorted(s.number for s in packed.ordered)
        self.record.answer, self.record.continuations, self.record.error = "", 0, ""
        async with aclosing(self._stream(model, self.record.prompt, continuation=False)) as events:
            async for event in events:
                yield event

    async def continue_answer(self) -> AsyncGenerator[Event, None]:
        """Send the partial answer back as the assistant turn and ask for the rest; join without seams."""
        from ragtui.llm.synthesize import continue_messages

        if not self.can_continue:
            yield Notice("info", "nothing to continue: the answer was neither cut for length nor cancelled")
            return
        try:
            model = await self._model()
        except (ConfigError, LLMError) as exc:
            yield self._fail("synthesize", str(exc))
            return
        self.record.continuations += 1
        async with aclosing(self._stream(model, continue_messages(self.record.prompt, self.answer),
                                         continuation=True)) as events:
            async for event in events:
                yield event

    async def _stream(self, model: ChatModel, messages: list[tuple[str, str]], *,
                      continuation: bool) -> AsyncGenerator[Event, None]:
        from ragtui.llm.continuation import SeamBuffer

        packing = self.packing
        yield SynthesisStarted(model.model, tuple(self.record.prompt_numbers), continuation,
                               windowed=tuple(sorted(packing.windows)) if packing else (),
                               left_out=tuple(s.number for s in packing.left_out) if packing else ())
        seam = SeamBuffer(self.answer) if continuation else None
        before = len(self.answer)
        self.record.stop_reason = StopReason.NONE
        started = time.perf_counter()
        reason = StopReason.CANCELLED
        fitted = model.fitted(messages, self.settings.llm.max_tokens)
        if fitted is not model:
            await model.aclose()
            model = self._synthesis = fitted
        deltas = model.stream(messages)
        try:
            try:
                async for delta in deltas:
                    text = seam.feed(delta.text) if seam else delta.text
                    if delta.stop_reason is not None and seam:
                        text += seam.finish()
                    if text:
                        self.record.answer += text
                        yield SynthesisToken(text)
                    if delta.stop_reason is not None:
                        reason = delta.stop_reason
            except LLMError as exc:
                reason, self.record.error = StopReason.ERROR, str(exc)
                yield StageFailed("synthesize", str(exc))
        finally:
            await deltas.aclose()
            key = "continue_s" if continuation else "synthesize_s"
            self.timings[key] = self.timings.get(key, 0.0) + time.perf_counter() - started
            self._finish_answer(reason)
            self.save()
        if continuation and len(self.answer) == before and reason is not StopReason.CANCELLED:
            yield Notice("warning", f"{model.model} repeated its answer instead of continuing it; nothing new "
                                    "was added (re-synthesize, or raise llm.max_tokens)")
        yield SynthesisFinished(self.answer, reason, tuple(self.citations), tuple(self.unknown_citations))
        yield self._saved()

    def _finish_answer(self, reason: StopReason) -> None:
        from ragtui.llm.citations import check_citations

        self.record.stop_reason = reason
        found = check_citations(self.answer, set(self.record.prompt_numbers))
        self.record.citations, self.record.unknown_citations = list(found.cited), list(found.unknown)

    # --- helpers --------------------------------------------------------------------

    def _fail(self, stage: Stage, message: str) -> StageFailed:
        self.record.error = message
        self.save()
        return StageFailed(stage, message)

    def _saved(self) -> SessionSaved:
        self.save()
        return SessionSaved(self.id or 0, MappingProxyType(dict(self.timings)))


def config_snapshot(settings: Settings) -> dict[str, Any]:
    """The effective settings for the history record, with secrets masked."""
    flat = settings.flat()
    if flat.get("llm.api_key"):
        flat["llm.api_key"] = "***"
    return flat


def _settled(source: SessionSource) -> Override:
    """The source's override, unless it now agrees with the model's verdict: then it is no longer one."""
    if (source.override is Override.RESCUED and source.verdict_relevant) or \
            (source.override is Override.DROPPED and not source.verdict_relevant):
        return Override.NONE
    return source.override


def _numbers(numbers: Sequence[int]) -> str:
    return " ".join(f"[{n}]" for n in numbers)
