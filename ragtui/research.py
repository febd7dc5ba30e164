"""A research session: a conversation of turns, each retrieve -> annotate -> synthesize, as async iterators of events.

The CLI and the TUI drive the same object and only render what it yields
(ragtui.events). No UI code here. The public shape:

    session = ResearchSession(settings, query, collections, *, history=..., retrieve=...)  # Workspace.new_session
    session.id, .query, .collections, .sources: tuple[SessionSource, ...], .answer: str,
    .stop_reason: StopReason, .meta: RetrievalMeta | None, .truncated (stop_reason == "length"),
    .can_continue (cut for length, or cancelled with partial text),
    .continuations, .citations, .unknown_citations, .timings, .relevant
    session.quote_checks(turn=None)   # the answer's attributed quotes, each looked up in the sources

    async for event in session.run(): ...          # turn 1: retrieve, annotate (if on), synthesize, save
    async for event in session.follow_up(question, rewrite=None): ...   # another turn (see follow_up)
    async for event in session.revise_rewrite(text): ...   # the latest follow-up again, with this rewrite
    async for event in session.reannotate(numbers=None, *, model=None, prompt_file=None): ...
    async for event in session.synthesize(): ...   # again, from the current Relevant set
    async for event in session.continue_answer(): ...   # after a "length" stop (or a cancelled answer)
    session.rescue(number); session.drop(number)   # move a source into / out of the synthesis set
    session = ResearchSession.reopen(settings, session_id, *, history=..., retrieve=...)  # Workspace.reopen
    session.save()                                 # None (and .not_saved says why) when the history is damaged

The Workspace injects both collaborators: `history`, the HistoryStore that saves
the session, and `retrieve`, an async callable `(query, collection names) -> Retrieval`
(Workspace.retrieve; tests pass a fixed one). A damaged history file never stops a
session: it runs in memory only, and every SessionSaved says so (`not_saved`).

Cancelling the consuming task, or closing an iterator, stops the LLM stream at once
and leaves the history record consistent: a cut answer keeps its partial text with
stop_reason "cancelled" (also when the cancel came before the answer started); a source whose
annotation a cancel cut keeps what it had before (its earlier annotation, or "not annotated", which
counts as relevant): finished work is never thrown away or filtered by a cancel.

Sources are frozen: the session replaces one (`_update`) when its state changes, so
the sources an event carried keep the values they had when it was yielded.

Turns: `session.turn` is the latest; `sources`, `answer`, `meta` and the other
answer properties are its. Source numbers continue across turns ([1]-[8] in turn 1,
[9]-... in turn 2), so a citation names one source in the whole conversation and
`source(n)`, `rescue(n)`, `drop(n)` reach any turn's source.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ragtui.config import ConfigError, Settings
from ragtui.errors import RagtuiError, describe
from ragtui.events import (
    AnnotationFailed,
    AnnotationFinished,
    AnnotationStarted,
    Event,
    Notice,
    RetrievalStarted,
    RewriteReady,
    SessionSaved,
    SourcesReady,
    Stage,
    StageFailed,
    SynthesisFinished,
    SynthesisStarted,
    SynthesisToken,
)
from ragtui.history import HistoryDamaged, HistoryStore, SessionRecord, Turn
from ragtui.llm.chat import ChatModel, LLMError
from ragtui.llm.synthesize import Plan
from ragtui.model import AnnotationState, Override, SessionSource, StopReason
from ragtui.quotes import QuoteCheck
from ragtui.retrieve.result import Hit, Retrieval, RetrievalMeta

RetrieveFn = Callable[[str, Sequence[str]], Awaitable[Retrieval]]


def preload() -> None:
    """Import what a first session or ingest needs (seconds of llama_index/chromadb), so a front end can
    pay it in a background thread after its first frame instead of on its event loop."""
    from ragtui import heavy

    heavy.load()
    import ragtui.ingest.pipeline
    import ragtui.retrieve.hybrid_retriever
    import ragtui.retrieve.pipeline
    import ragtui.retrieve.postprocess  # noqa: F401


class ResearchSession:
    """One question over some collections, with its sources, annotations, answer and history record."""

    def __init__(self, settings: Settings, query: str, collections: Sequence[str], *,
                 history: HistoryStore, retrieve: RetrieveFn) -> None:
        self.settings = settings
        self.history = history
        self._retrieve = retrieve
        self.record = SessionRecord(
            collections=list(collections), config=config_snapshot(settings),
            synthesis_model=settings.llm.model, annotation_model=settings.llm.annotator,
            annotation_on=settings.annotation.enabled, turns=[Turn(query)])
        self._synthesis: ChatModel | None = None
        self._annotator: ChatModel | None = None
        self.packing: Plan | None = None      # the last synthesis prompt's packing (not kept in the history)
        self.not_saved = ""                   # why the history does not hold this session ("" while it does)

    # --- state ------------------------------------------------------------------

    @property
    def id(self) -> int | None:
        return self.record.id

    @property
    def turn(self) -> Turn:
        """The latest turn: the one being answered, re-annotated or continued."""
        return self.record.turn

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(self.record.turns)

    @property
    def query(self) -> str:
        """The latest turn's question as typed."""
        return self.turn.query

    @property
    def collections(self) -> list[str]:
        return self.record.collections

    @property
    def sources(self) -> tuple[SessionSource, ...]:
        """The latest turn's sources."""
        return tuple(self.turn.sources)

    @property
    def answer(self) -> str:
        return self.turn.answer

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
        return self.turn.stop_reason

    @property
    def meta(self) -> RetrievalMeta | None:
        """The latest turn's retrieval_meta (of the question as typed); None until retrieval ran."""
        return self.turn.retrieval_meta

    @property
    def timings(self) -> dict[str, float]:
        return self.turn.timings

    @property
    def continuations(self) -> int:
        return self.turn.continuations

    @property
    def citations(self) -> list[int]:
        return self.turn.citations

    @property
    def unknown_citations(self) -> list[int]:
        return self.turn.unknown_citations

    @property
    def truncated(self) -> bool:
        """The answer stopped for length: Continue is on offer."""
        return self.turn.stop_reason is StopReason.LENGTH

    @property
    def can_continue(self) -> bool:
        """A partial answer (cut for length, or cancelled) that Continue can extend."""
        return self.turn.stop_reason in (StopReason.LENGTH, StopReason.CANCELLED) \
            and bool(self.turn.prompt and self.answer)

    @property
    def relevant(self) -> list[SessionSource]:
        return [s for s in self.sources if s.relevant]

    def source(self, number: int) -> SessionSource:
        turn, i = self._index(number)
        return turn.sources[i]

    def turn_of(self, number: int) -> int:
        """The 1-based turn that source [number] belongs to."""
        return self.record.turns.index(self._index(number)[0]) + 1

    def _index(self, number: int) -> tuple[Turn, int]:
        for turn in self.record.turns:
            for i, s in enumerate(turn.sources):
                if s.number == number:
                    return turn, i
        numbers = [s.number for s in self.record.sources]
        have = f"[{numbers[0]}]-[{numbers[-1]}]" if numbers else "none"
        raise KeyError(f"no source [{number}] in this session (its sources: {have})")

    def _update(self, number: int, **changes: Any) -> SessionSource:
        """Replace source [number] with a copy holding `changes`; sources already handed out stay as they were."""
        turn, i = self._index(number)
        source = turn.sources[i] = dataclasses.replace(turn.sources[i], **changes)
        return source

    def save(self) -> int | None:
        """Write the record to the history; None when the history file is damaged (`not_saved` says so)."""
        try:
            return self.history.save(self.record)
        except HistoryDamaged as exc:
            self.not_saved = describe(exc)
            return None

    @classmethod
    def reopen(cls, settings: Settings, session_id: int, *, history: HistoryStore,
               retrieve: RetrieveFn) -> ResearchSession:
        """A session rebuilt from its history record; re-annotate and continue work on it."""
        session = cls(settings, "", [], history=history, retrieve=retrieve)
        session.record = history.load(session_id)
        return session

    # --- the whole pipeline ---------------------------------------------------------

    async def run(self) -> AsyncGenerator[Event, None]:
        """Turn 1: check the models, retrieve, annotate (when on), synthesize; save after each stage.

        A cancel (or a closed iterator) before an answer finished is saved as stop reason "cancelled",
        so history tells an interrupted session from one still waiting for its answer.
        """
        try:
            async with aclosing(self._run()) as events:
                async for event in events:
                    yield event
        except (asyncio.CancelledError, GeneratorExit):
            if self.turn.stop_reason is StopReason.NONE:
                self.turn.stop_reason = StopReason.CANCELLED
                self.save()
            raise

    async def _run(self) -> AsyncGenerator[Event, None]:
        """The stages of run().

        When the LLM cannot be used (Ollama down, model missing, llm.model unset) the
        session still retrieves (keyword-only if the embedder is down too) and is saved
        with its sources; the LLM stage then fails with the reason, and a later
        re-annotate or synthesize on the reopened session picks up from there.
        """
        llm_problem, llm_stage = await self._check_models()
        yield RetrievalStarted(tuple(self.collections))
        started = time.perf_counter()
        try:
            retrieval = await self._retrieve(self.query, self.collections)
        except Exception as exc:  # an unknown collection or a store failure: said, and the session kept
            yield self._fail("retrieve", describe(exc))
            return
        self.timings["retrieve_s"] = time.perf_counter() - started
        self.turn.retrieval_meta, self.turn.keyword_only = retrieval.meta, retrieval.keyword_only
        async with aclosing(self._answer_turn(retrieval.hits, retrieval.notices, llm_problem, llm_stage)) as events:
            async for event in events:
                yield event

    async def follow_up(self, question: str, *, rewrite: str | None = None) -> AsyncGenerator[Event, None]:
        """A new turn: `question` answered in the light of the conversation so far.

        Retrieved twice, on the question as typed and on a standalone rewrite (the
        LLM's from the conversation, or `rewrite` when given: recorded as the user's),
        and the two rankings fused by RRF (retrieve/followup.py), so a poor rewrite
        cannot lose what the typed words find. Without a usable LLM the rewrite is
        skipped with a notice. Then annotation and a synthesis whose prompt carries
        the earlier turns' questions and answers within the context budget.
        """
        from ragtui.llm.rewrite import clean_rewrite
        from ragtui.retrieve.followup import fuse_runs

        question = " ".join(question.split())
        if not question:
            raise RagtuiError("a follow-up needs a question", exit_code=2)
        self.record.turns.append(Turn(question))
        self.packing = None                   # the previous turn's prompt
        llm_problem, llm_stage = await self._check_models()
        if rewrite is not None:
            self.turn.rewrite, self.turn.rewrite_by = clean_rewrite(rewrite), "user"
            if self.turn.rewrite:
                yield RewriteReady(question, self.turn.rewrite, "user")
        elif llm_problem:
            yield Notice("warning", f"the follow-up was not rewritten ({llm_problem}); retrieving on the "
                                    "question as typed only")
        else:
            async with aclosing(self._rewrite()) as events:
                async for event in events:
                    yield event
        yield RetrievalStarted(tuple(self.collections))
        queries = [question] + ([self.turn.rewrite] if self.turn.rewrite and self.turn.rewrite != question else [])
        started = time.perf_counter()
        try:
            runs = [await self._retrieve(q, self.collections) for q in queries]   # one searcher per collection
        except Exception as exc:  # an unknown collection or a store failure: said, and the session kept
            yield self._fail("retrieve", describe(exc))
            return
        self.timings["retrieve_s"] = time.perf_counter() - started
        typed = runs[0]
        self.turn.retrieval_meta, self.turn.keyword_only = typed.meta, any(r.keyword_only for r in runs)
        hits, notices = list(typed.hits), list(typed.notices)
        if len(runs) > 1:
            self.turn.rewrite_meta = runs[1].meta
            hits = fuse_runs(typed.hits, runs[1].hits, self.settings.retrieve.rrf_k)
            notices += [n for n in runs[1].notices if n not in notices]
        async with aclosing(self._answer_turn(hits, notices, llm_problem, llm_stage)) as events:
            async for event in events:
                yield event

    async def revise_rewrite(self, rewrite: str) -> AsyncGenerator[Event, None]:
        """The latest follow-up again, retrieved with `rewrite` instead of the LLM's (the user's override)."""
        if len(self.record.turns) < 2:
            raise RagtuiError("only a follow-up has a rewrite: this session has one turn", exit_code=2)
        question = self.record.turns.pop().query
        async with aclosing(self.follow_up(question, rewrite=rewrite)) as events:
            async for event in events:
                yield event

    async def _check_models(self) -> tuple[str, Stage]:
        """"" when the chat models answer, else why not and the stage that will fail."""
        llm_stage: Stage = "synthesize"
        try:
            await self._model()
            if self.record.annotation_on:
                llm_stage = "annotate"
                self._annotator = await self._annotation_model(None)
        except (ConfigError, LLMError) as exc:
            return str(exc), llm_stage
        return "", llm_stage

    async def _rewrite(self) -> AsyncGenerator[Event, None]:
        """Ask the synthesis model for the latest question as a standalone one; a failure only says so."""
        from ragtui.llm.packing import context_budget, fit_conversation
        from ragtui.llm.rewrite import clean_rewrite, rewrite_messages

        model = await self._model()
        conversation = [pair for _, pair in self._conversation()]
        kept, _ = fit_conversation(conversation, context_budget(model.context_window, self.settings.llm.max_tokens))
        messages = rewrite_messages([conversation[i] for i in kept], self.query)
        fitted = model.fitted(messages, self.settings.llm.max_tokens)
        if fitted is not model:
            await model.aclose()
            model = self._synthesis = fitted
        started = time.perf_counter()
        try:
            reply, _ = await model.complete(messages)
        except LLMError as exc:
            yield Notice("warning", f"the follow-up was not rewritten ({exc}); retrieving on the question as "
                                    "typed only")
            return
        finally:
            self.timings["rewrite_s"] = time.perf_counter() - started
        text = clean_rewrite(reply)
        if not text:
            yield Notice("warning", f"{model.model} gave no usable rewrite of the follow-up; retrieving on the "
                                    "question as typed only")
            return
        self.turn.rewrite, self.turn.rewrite_by = text, model.model
        yield RewriteReady(self.query, text, model.model)

    def _conversation(self) -> list[tuple[int, tuple[str, str]]]:
        """The earlier turns that have an answer: (turn number, (question, answer))."""
        return [(i, (t.query, t.answer)) for i, t in enumerate(self.record.turns[:-1], start=1) if t.answer.strip()]

    async def _answer_turn(self, hits: Sequence[Hit], notices: Sequence[str], llm_problem: str,
                           llm_stage: Stage) -> AsyncGenerator[Event, None]:
        """Number the latest turn's sources after every earlier turn's, then annotate and synthesize."""
        base = self.record.next_number()
        numbers = {(h.chunk.meta.collection, h.chunk.id): base + i for i, h in enumerate(hits)}
        state = AnnotationState.PENDING if self.record.annotation_on and not llm_problem else AnnotationState.OFF
        self.turn.sources = [
            SessionSource(number=base + i, chunk=hit.chunk, score=hit.score, rel_score=hit.rel_score,
                          legs=tuple(hit.legs), state=state, evidence=hit.evidence, distance=hit.distance,
                          neighbor_of=numbers.get((hit.chunk.meta.collection, hit.neighbor_of), 0)
                          if hit.neighbor_of else 0)
            for i, hit in enumerate(hits)]
        self.save()
        yield SourcesReady(self.sources, self.turn.retrieval_meta or RetrievalMeta(), self.turn.keyword_only,
                           turn=len(self.record.turns))
        for notice in notices:
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
            if self.turn.error:
                return
        async with aclosing(self.synthesize()) as events:
            async for event in events:
                yield event

    # --- annotation -----------------------------------------------------------------

    async def reannotate(self, numbers: Sequence[int] | None = None, *, model: str | None = None,
                         prompt_file: str | Path | None = None) -> AsyncGenerator[Event, None]:
        """Annotate some sources (the latest turn's by default; any turn's by number) again, optionally with
        another model or prompt file; each source records the model and prompt that annotated it."""
        # an unknown number raises KeyError here, before any source changes
        targets = [self.source(n).number for n in numbers] if numbers is not None else [s.number for s in self.sources]
        self.record.annotation_on = True
        async with aclosing(self._annotate(targets, model=model, prompt_file=prompt_file)) as events:
            async for event in events:
                yield event
        yield self._saved()

    async def _annotate(self, targets: Sequence[int], *, model: str | None,
                        prompt_file: str | Path | None) -> AsyncGenerator[Event, None]:
        from ragtui.llm.annotate import load_template

        prompt_path = self.settings.annotation.prompt_file if prompt_file is None else prompt_file
        try:
            template = load_template(prompt_path)
            llm = await self._annotation_model(model)
        except (ConfigError, LLMError) as exc:
            yield self._fail("annotate", str(exc))     # earlier annotations stay as they were
            return
        before = {n: self.source(n) for n in targets}   # what a cancel puts back
        started = time.perf_counter()
        try:
            for turn in self.record.turns:     # each turn's sources are judged against that turn's question
                mine = [n for n in targets if any(s.number == n for s in turn.sources)]
                if mine:
                    async with aclosing(self._annotate_turn(turn, mine, llm, template,
                                                            str(prompt_path or ""))) as events:
                        async for event in events:
                            yield event
        finally:
            for n in targets:
                if self.source(n).state in (AnnotationState.PENDING, AnnotationState.RUNNING):
                    turn, i = self._index(n)
                    turn.sources[i] = before[n]   # cut by a cancel: as it was before this pass
            self.timings["annotate_s"] = self.timings.get("annotate_s", 0.0) + time.perf_counter() - started
            if len(targets) == len(self.sources):
                self.record.annotation_model = llm.model
            if llm is not self._annotator:
                await llm.aclose()
            self.save()

    async def _annotate_turn(self, turn: Turn, targets: Sequence[int], llm: ChatModel, template: str,
                             prompt: str) -> AsyncGenerator[Event, None]:
        """Annotate these sources of one turn against its question (its standalone rewrite, when it has one)."""
        from ragtui.llm.annotate import annotate_sources

        texts = [(n, self._update(n, state=AnnotationState.PENDING, error="").chunk.text) for n in targets]
        calls = annotate_sources(llm, texts, query=turn.rewrite or turn.query,
                                 template=template, pattern=self.settings.annotation.irrelevant_pattern,
                                 concurrency=self.settings.annotation.concurrency)
        try:
            async for event in calls:
                if isinstance(event, AnnotationStarted):
                    self._update(event.number, state=AnnotationState.RUNNING)
                elif isinstance(event, AnnotationFinished):
                    state = AnnotationState.RELEVANT if event.relevant else AnnotationState.IRRELEVANT
                    source = self._update(event.number, state=state, annotation=event.text, error="",
                                          annotated_by=llm.model, annotation_prompt=prompt)
                    self._update(source.number, override=_settled(source))
                elif isinstance(event, AnnotationFailed):
                    self._update(event.number, state=AnnotationState.FAILED, error=event.error)
                yield event
        finally:
            await calls.aclose()

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
        """A fresh answer to the latest turn from its current Relevant set (RAGWeed 5), with the earlier
        turns' questions and answers as conversation context."""
        from ragtui.llm.packing import CONVERSATION_SHARE, context_budget, fit_conversation
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
        conversation = self._conversation()
        budget = context_budget(model.context_window, self.settings.llm.max_tokens) // CONVERSATION_SHARE
        kept, used = fit_conversation([pair for _, pair in conversation], max(budget, 0))
        left = [conversation[i] for i in range(len(conversation)) if i not in kept]
        if left:
            yield Notice("info", f"earlier turn(s) {', '.join(str(n) for n, _ in left)} did not fit the context "
                                 "budget with their answers; only their questions are named in the prompt")
        packed = plan(chosen, query=self.query, context_window=model.context_window - used,
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
        turn = self.turn
        turn.prompt = build_messages(self.query, packed.ordered,
                                     conversation=[conversation[i][1] for i in kept],
                                     earlier=[question for _, (question, _) in left])
        turn.context_turns = [conversation[i][0] for i in kept]
        turn.prompt_numbers = sorted(s.number for s in packed.ordered)
        turn.answer, turn.continuations, turn.error = "", 0, ""
        async with aclosing(self._stream(model, turn.prompt, continuation=False)) as events:
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
        self.turn.continuations += 1
        async with aclosing(self._stream(model, continue_messages(self.turn.prompt, self.answer),
                                         continuation=True)) as events:
            async for event in events:
                yield event

    async def _stream(self, model: ChatModel, messages: list[tuple[str, str]], *,
                      continuation: bool) -> AsyncGenerator[Event, None]:
        from ragtui.llm.continuation import SeamBuffer

        turn = self.turn
        packing = self.packing
        yield SynthesisStarted(model.model, tuple(turn.prompt_numbers), continuation,
                               windowed=tuple(sorted(packing.windows)) if packing else (),
                               left_out=tuple(s.number for s in packing.left_out) if packing else ())
        seam = SeamBuffer(self.answer) if continuation else None
        before = len(self.answer)
        turn.stop_reason = StopReason.NONE
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
                        turn.answer += text
                        yield SynthesisToken(text)
                    if delta.stop_reason is not None:
                        reason = delta.stop_reason
            except LLMError as exc:
                reason, turn.error = StopReason.ERROR, str(exc)
                yield StageFailed("synthesize", str(exc))
            if not continuation and not self.answer.strip() and reason not in (StopReason.CANCELLED,
                                                                                StopReason.ERROR):
                reason, turn.error = StopReason.ERROR, empty_answer_message(model.model, reason)
                yield StageFailed("synthesize", turn.error)
        finally:
            await deltas.aclose()
            key = "continue_s" if continuation else "synthesize_s"
            self.timings[key] = self.timings.get(key, 0.0) + time.perf_counter() - started
            self._finish_answer(reason)
            self.save()
        if continuation and len(self.answer) == before and reason is not StopReason.CANCELLED:
            yield Notice("warning", f"{model.model} repeated its answer instead of continuing it; nothing new "
                                    "was added (re-synthesize, or raise llm.max_tokens)")
        yield SynthesisFinished(self.answer, reason, tuple(self.citations), tuple(self.unknown_citations),
                                self.quote_checks())
        yield self._saved()

    def _finish_answer(self, reason: StopReason) -> None:
        from ragtui.llm.citations import check_citations

        turn = self.turn
        turn.stop_reason = reason
        found = check_citations(turn.answer, set(turn.prompt_numbers))
        turn.citations, turn.unknown_citations = list(found.cited), list(found.unknown)

    def quote_checks(self, turn: Turn | None = None) -> tuple[QuoteCheck, ...]:
        """The quotes a turn's answer (the latest's by default) attributes to sources, each looked up in every
        source of the session: a quote its cited source does not hold is unverified (`ragtui.quotes`).
        Computed from the stored answer and chunk texts, so a reopened session is checked the same way."""
        from ragtui.llm.citations import quote_checks

        turn = turn or self.turn
        return quote_checks(turn.answer, {s.number: s.chunk.text for s in self.record.sources})

    # --- helpers --------------------------------------------------------------------

    def _fail(self, stage: Stage, message: str) -> StageFailed:
        self.turn.error = message
        self.save()
        return StageFailed(stage, message)

    def _saved(self) -> SessionSaved:
        self.save()
        return SessionSaved(self.id or 0, MappingProxyType(dict(self.timings)), not_saved=self.not_saved)


def config_snapshot(settings: Settings) -> dict[str, Any]:
    """The effective settings for the history record (secrets masked by `Settings.flat`)."""
    return settings.flat()


def _settled(source: SessionSource) -> Override:
    """The source's override, unless it now agrees with the model's verdict: then it is no longer one."""
    if (source.override is Override.RESCUED and source.verdict_relevant) or \
            (source.override is Override.DROPPED and not source.verdict_relevant):
        return Override.NONE
    return source.override


def _numbers(numbers: Sequence[int]) -> str:
    return " ".join(f"[{n}]" for n in numbers)


def empty_answer_message(model: str, reason: StopReason) -> str:
    """Why an answer is missing when the model said it was done: a blank pane alone would look like a hang."""
    said = f" (stop reason {reason.value!r})" if reason.value else ""
    return (f"{model} finished without writing an answer{said}; ask again, or try another model "
            "(llm.model)")
