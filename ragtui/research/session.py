"""`ResearchSession`: the verbs of a research conversation, each an async iterator of events (ragtui.events).

The CLI and the TUI drive the same object and only render what it yields. The
Workspace injects both collaborators: `history`, the HistoryStore that saves the
session, and `retrieve`, an async callable `(query, collection names, *, search_filter) -> Retrieval`
(Workspace.retrieve; tests pass a fixed one). What the session has found and
written so far is `session.conversation`, a frozen snapshot; the few properties
below read it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragtui.config import Settings
from ragtui.errors import RagtuiError, describe
from ragtui.events import Event, Notice, RetrievalStarted, RewriteReady, SourcesReady
from ragtui.history import HistoryStore
from ragtui.model import conversation as transitions
from ragtui.model.conversation import Conversation, SessionSource, StopReason, Turn
from ragtui.model.filters import SearchFilter
from ragtui.model.research_run import ResearchRun
from ragtui.model.retrieval import Retrieval, RetrievalMeta
from ragtui.numbers import NumberCheck
from ragtui.quotes import QuoteCheck
from ragtui.research.chat_clients import ChatClients
from ragtui.research.ledger import Ledger
from ragtui.research.stages import TurnStages

RetrieveFn = Callable[..., Awaitable[Retrieval]]   # (query, collection names, *, search_filter, strategies)


def preload() -> None:
    """Import what a first session or ingest needs (seconds of llama_index/chromadb), so a front end can
    pay it in a background thread after its first frame instead of on its event loop."""
    from ragtui import heavy

    heavy.load()
    import ragtui.ingest.pipeline
    import ragtui.retrieve.hybrid_retriever
    import ragtui.retrieve.pipeline
    import ragtui.retrieve.postprocess  # noqa: F401


def preflight(settings: Settings, *, set_model: str) -> None:
    """What an ask needs before anything runs, checked once for every front end (`ragtui ask`, the MCP server's
    ask): a synthesis model named (`set_model` says how, in the front end's words; a config error), and the
    annotation prompt file readable when annotation is on."""
    from ragtui.llm.annotate import load_template
    from ragtui.llm.providers import model_not_set

    if not settings.llm.model:
        raise model_not_set(set_model)
    if settings.annotation.enabled:
        load_template(settings.annotation.prompt_file)


class ResearchSession:
    """One conversation over some collections: its turns' sources, annotations and answers, saved as they change.

    Turns: the latest is the one follow-ups, re-annotation, synthesis and Continue
    work on. Source numbers continue across turns, so `source(n)`, `rescue(n)` and
    `drop(n)` reach any turn's source. `search_filter` keeps every turn's retrieval to part
    of the collections; each turn's retrieval meta records it, so a reopened session goes on
    with the filter of its latest turn.
    """

    def __init__(self, settings: Settings, query: str, collections: Sequence[str], *,
                 history: HistoryStore, retrieve: RetrieveFn, search_filter: SearchFilter | None = None,
                 topic: Callable[[str], str] = lambda name: "") -> None:
        self.settings = settings
        self._retrieve = retrieve
        self.search_filter = search_filter or SearchFilter()
        self._ledger = Ledger(Conversation(
            collections=tuple(collections), config=config_snapshot(settings),
            synthesis_model=settings.llm.model, annotation_model=settings.llm.annotator,
            annotation_on=settings.annotation.enabled, turns=(Turn(query),)), history)
        self._models = ChatClients(settings, self._ledger)
        self._stages = TurnStages(settings, self._ledger, self._models, topic)

    # --- reading ------------------------------------------------------------------------

    @property
    def conversation(self) -> Conversation:
        """The conversation as it stands now (frozen: a later change replaces it, never alters this one)."""
        return self._ledger.conversation

    @property
    def id(self) -> int | None:
        return self.conversation.id

    @property
    def turns(self) -> tuple[Turn, ...]:
        return self.conversation.turns

    @property
    def turn(self) -> Turn:
        """The latest turn: the one being answered, re-annotated or continued."""
        return self.conversation.turn

    @property
    def sources(self) -> tuple[SessionSource, ...]:
        """The latest turn's sources."""
        return self.turn.sources

    @property
    def answer(self) -> str:
        """The latest turn's answer."""
        return self.turn.answer

    def source(self, number: int) -> SessionSource:
        """Source [number] of any turn."""
        return self.conversation.source(number)

    @property
    def not_saved(self) -> str:
        """Why the history does not hold this session ("" while it does)."""
        return self._ledger.not_saved

    def use_in_answer(self, number: int) -> str | None:
        """How source `number` went into the last prompt: "whole", "window" (its most relevant part),
        "did not fit", or None (not in the synthesis set, or no prompt built in this process)."""
        packing = self._stages.packing
        if packing is None:
            return None
        if number in packing.windows:
            return "window"
        if any(s.number == number for s in packing.ordered):
            return "whole"
        return "did not fit" if any(s.number == number for s in packing.left_out) else None

    def quote_checks(self, turn: Turn | None = None) -> tuple[QuoteCheck, ...]:
        """The quotes a turn's answer (the latest's by default) attributes to sources, each checked."""
        return self._stages.quote_checks(turn)

    def number_checks(self, turn: Turn | None = None) -> tuple[NumberCheck, ...]:
        """The numbers a turn's answer states that the sources its sentences cite do not hold."""
        return self._stages.number_checks(turn)

    # --- keeping ------------------------------------------------------------------------

    def save(self) -> int | None:
        """Write the conversation to the history; None when the history file is damaged (`not_saved` says so)."""
        return self._ledger.save()

    @classmethod
    def reopen(cls, settings: Settings, session_id: int, *, history: HistoryStore,
               retrieve: RetrieveFn, topic: Callable[[str], str] = lambda name: "") -> ResearchSession:
        """A session rebuilt from its history record; re-annotate and continue work on it."""
        session = cls(settings, "", [], history=history, retrieve=retrieve, topic=topic)
        turns = session._ledger.reopen(session_id).turns
        # the latest retrieval's filter (a research run's report retrieved nothing: its searches' filter)
        meta = next((t.retrieval_meta for t in reversed(turns) if t.retrieval_meta is not None), None)
        session.search_filter = meta.filter if meta is not None else SearchFilter()
        return session

    async def aclose(self) -> None:
        """Close the HTTP clients of the models this session opened."""
        await self._models.aclose()

    # --- asking -------------------------------------------------------------------------

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
                self._ledger.change_turn(stop_reason=StopReason.CANCELLED)
                self.save()
            raise

    async def _run(self) -> AsyncGenerator[Event, None]:
        """The stages of run().

        When the LLM cannot be used (Ollama down, model missing, llm.model unset) the
        session still retrieves (keyword-only if the embedder is down too) and is saved
        with its sources; the LLM stage then fails with the reason, and a later
        re-annotate or synthesize on the reopened session picks up from there.
        """
        llm_problem, llm_stage = await self._models.check()
        yield RetrievalStarted(self.conversation.collections)
        retrieval, failed = await self._retrieved(self.turn.query)
        if retrieval is None:
            yield self._stages.fail("retrieve", failed)
            return
        async with aclosing(self._stages.answer(retrieval.hits, retrieval.notices, llm_problem,
                                                llm_stage)) as events:
            async for event in events:
                yield event

    async def _retrieved(self, query: str) -> tuple[Retrieval | None, str]:
        """The current turn's retrieval on `query`, timed and recorded on the turn; (None, why) when it failed (an
        unknown collection or a store failure: the caller says so, and the session is kept)."""
        started = time.perf_counter()
        try:
            retrieval = await self._retrieve(query, self.conversation.collections, search_filter=self.search_filter)
        except Exception as exc:
            return None, describe(exc)
        self._ledger.time("retrieve_s", time.perf_counter() - started)
        self._ledger.change_turn(retrieval_meta=replace(retrieval.meta, filter=self.search_filter),
                                 keyword_only=retrieval.keyword_only)
        return retrieval, ""

    async def follow_up(self, question: str, *, rewrite: str | None = None,
                        search_filter: SearchFilter | None = None) -> AsyncGenerator[Event, None]:
        """A new turn: `question` answered in the light of the conversation so far.

        Retrieved twice, on the question as typed and on a standalone rewrite (the
        LLM's from the conversation, or `rewrite` when given: recorded as the user's),
        and the two rankings fused by RRF (retrieve/runs.py), so a poor rewrite
        cannot lose what the typed words find. Without a usable LLM the rewrite is
        skipped with a notice. Then annotation and a synthesis whose prompt carries
        the earlier turns' questions and answers within the context budget.
        `search_filter` replaces the session's filter from this turn on.
        """
        from ragtui.llm.rewrite import clean_rewrite
        from ragtui.retrieve.runs import fuse_runs, fused_notices

        question = " ".join(question.split())
        if not question:
            raise RagtuiError("a follow-up needs a question", exit_code=2)
        if search_filter is not None:
            self.search_filter = search_filter
        self._ledger.change(turns=(*self.turns, Turn(question)))
        self._stages.packing = None                   # the previous turn's prompt
        llm_problem, llm_stage = await self._models.check()
        if rewrite is not None:
            turn = self._ledger.change_turn(rewrite=clean_rewrite(rewrite), rewrite_by="user")
            if turn.rewrite:
                yield RewriteReady(question, turn.rewrite, "user")
        elif llm_problem:
            yield Notice("warning", f"the follow-up was not rewritten ({llm_problem}); retrieving on the "
                                    "question as typed only")
        else:
            async with aclosing(self._rewrite()) as events:
                async for event in events:
                    yield event
        collections = self.conversation.collections
        yield RetrievalStarted(collections)
        rewritten = self.turn.rewrite
        queries = [question] + ([rewritten] if rewritten and rewritten != question else [])
        started = time.perf_counter()
        try:
            runs = [await self._retrieve(q, collections, search_filter=self.search_filter,   # one searcher
                                         strategies=q is queries[-1])     # per collection; the strategies
                    for q in queries]   # (HyDE, multi-query, fragments) on the standalone rewrite only
        except Exception as exc:  # an unknown collection or a store failure: said, and the session kept
            yield self._stages.fail("retrieve", describe(exc))
            return
        self._ledger.time("retrieve_s", time.perf_counter() - started)
        typed = runs[0]
        self._ledger.change_turn(retrieval_meta=replace(typed.meta, filter=self.search_filter),
                                 keyword_only=any(r.keyword_only for r in runs))
        hits, notices = list(typed.hits), list(typed.notices)
        if len(runs) > 1:
            self._ledger.change_turn(rewrite_meta=runs[1].meta)
            hits = fuse_runs([("query", typed.hits), ("rewrite", runs[1].hits)], self.settings.retrieve.rrf_k,
                             self.settings.retrieve.annotate_max)
            notices = fused_notices(runs, hits)
        async with aclosing(self._stages.answer(hits, notices, llm_problem, llm_stage)) as events:
            async for event in events:
                yield event

    async def revise_rewrite(self, rewrite: str) -> AsyncGenerator[Event, None]:
        """The latest follow-up again, retrieved with `rewrite` instead of the LLM's (the user's override)."""
        if len(self.turns) < 2:
            raise RagtuiError("only a follow-up has a rewrite: this session has one turn", exit_code=2)
        question = self.turn.query
        self._ledger.change(turns=self.turns[:-1])
        async with aclosing(self.follow_up(question, rewrite=rewrite)) as events:
            async for event in events:
                yield event

    async def _rewrite(self) -> AsyncGenerator[Event, None]:
        """Ask the synthesis model for the latest question as a standalone one; a failure only says so."""
        from ragtui.llm import retries
        from ragtui.llm.chat import LLMError
        from ragtui.llm.packing import context_budget, fit_conversation
        from ragtui.llm.rewrite import clean_rewrite, rewrite_messages, unusable

        model = await self._models.synthesis_model()
        conversation = [pair for _, pair in self._stages.earlier_answers()]
        kept, _ = fit_conversation(conversation, context_budget(model.context_window, self.settings.llm.max_tokens))
        messages = rewrite_messages([conversation[i] for i in kept], self.turn.query)
        model = await self._models.fitted(model, messages)
        started = time.perf_counter()
        reply = ""
        try:
            async for step in retries.complete(model, messages, self.settings.llm.backoff):
                if isinstance(step, retries.Retrying):
                    yield Notice("warning", step.line(f"the rewrite of the follow-up by {model.model}"))
                else:
                    reply = step.text
        except LLMError as exc:
            yield Notice("warning", f"the follow-up was not rewritten ({exc}); retrieving on the question as "
                                    "typed only")
            return
        finally:
            self._ledger.change_turn(timings={**self.turn.timings, "rewrite_s": time.perf_counter() - started})
        text = clean_rewrite(reply)
        if not text:
            yield Notice("warning", f"{model.model} gave no usable rewrite of the follow-up; retrieving on the "
                                    "question as typed only")
            return
        why = unusable(text, self.turn.query, [pair for _, pair in self._stages.earlier_answers()])
        if why:
            yield Notice("warning", f"{model.model}'s rewrite of the follow-up was not used ({why}): {text!r}; "
                                    "retrieving and annotating on the question as typed")
            return
        self._ledger.change_turn(rewrite=text, rewrite_by=model.model)
        yield RewriteReady(self.turn.query, text, model.model)

    # --- a research run's steps (research/deep.py drives them) -----------------------------

    @property
    def research(self) -> ResearchRun | None:
        return self.conversation.research

    def keep_research(self, run: ResearchRun) -> None:
        """The research run's plan, rounds and cost as they now stand, kept with the conversation (saved with it)."""
        self._ledger.change(research=run)

    async def gather(self, query: str, *, most: int) -> AsyncGenerator[Event, None]:
        """One search of a research run: a turn on `query`, retrieved, its sources not already in the session
        (at most `most`) numbered and annotated against it, and no answer. The session's first turn is used
        while nothing has run on it."""
        fresh = self.turn
        if fresh.retrieval_meta is None and not fresh.sources and not fresh.error and not fresh.answer:
            self._ledger.change_turn(query=query)
        else:
            self._ledger.change(turns=(*self.turns, Turn(query)))
        self._stages.packing = None
        llm_problem, llm_stage = await self._models.check()
        yield RetrievalStarted(self.conversation.collections)
        retrieval, failed = await self._retrieved(query)
        if retrieval is None:
            yield self._stages.fail("retrieve", failed)
            return
        seen = {(s.chunk.meta.collection, s.chunk.id) for s in self.conversation.all_sources}
        hits = [h for h in retrieval.hits if (h.chunk.meta.collection, h.chunk.id) not in seen][:max(most, 0)]
        if retrieval.hits and not hits:
            turn = self.turn
            yield SourcesReady((), turn.retrieval_meta or RetrievalMeta(), turn.keyword_only, turn=len(self.turns))
            yield Notice("info", f"{query!r} found only sources this session already has")
            yield self._stages.saved()
            return
        async with aclosing(self._stages.answer(hits, retrieval.notices, llm_problem, llm_stage,
                                                synthesize=False)) as events:
            async for event in events:
                yield event

    def report(self) -> AsyncGenerator[Event, None]:
        """A research run's report: a new last turn on the run's question, written from every search's kept
        sources and organised by the plan's sub-questions."""
        run = self.research
        if run is None:
            raise RagtuiError("only a research run has a report", exit_code=2)
        self._ledger.change(turns=(*self.turns, Turn(run.question)))
        self._ledger.change(research=replace(run, report_turn=len(self.turns)))
        self._stages.packing = None
        return self._stages.synthesize()

    async def complete(self, messages: list[tuple[str, str]]) -> str:
        """The synthesis model's whole reply to `messages` (a research run's plan and gap check); a call its
        server cut is asked again (llm.retries); LLMError when there is none."""
        from ragtui.llm import retries

        model = await self._models.synthesis_model()
        model = await self._models.fitted(model, messages)
        reply = ""
        async for step in retries.complete(model, messages, self.settings.llm.backoff):
            if not isinstance(step, retries.Retrying):
                reply = step.text
        return reply

    # --- working on the sources and the answer --------------------------------------------

    async def reannotate(self, numbers: Sequence[int] | None = None, *, model: str | None = None,
                         prompt_file: str | Path | None = None) -> AsyncGenerator[Event, None]:
        """Annotate some sources (the latest turn's by default, every search's for a research run's report; any
        turn's by number) again, optionally with another model or prompt file; each source records the model and
        prompt that annotated it."""
        default = self.conversation.all_sources if self.conversation.is_report else self.sources
        # an unknown number raises KeyError here, before any source changes
        targets = [self.source(n).number for n in numbers] if numbers is not None else [s.number for s in default]
        self._ledger.change(annotation_on=True)
        async with aclosing(self._stages.annotate(targets, model=model, prompt_file=prompt_file)) as events:
            async for event in events:
                yield event
        yield self._stages.saved()

    def rescue(self, number: int) -> SessionSource:
        """Put a filtered (or failed) source back into the synthesis set; the source as it now stands."""
        source = self._ledger.put(transitions.rescued(self.source(number)))
        self.save()
        return source

    def drop(self, number: int) -> SessionSource:
        """Take a source out of the synthesis set; the source as it now stands."""
        source = self._ledger.put(transitions.dropped(self.source(number)))
        self.save()
        return source

    def synthesize(self) -> AsyncGenerator[Event, None]:
        """A fresh answer to the latest turn from its current Relevant set."""
        return self._stages.synthesize()

    def continue_answer(self) -> AsyncGenerator[Event, None]:
        """Ask for the rest of the latest answer and join it without seams, when `Turn.can_continue` (cut for
        length, or cancelled); otherwise one notice with `Turn.continue_refusal`."""
        return self._stages.continue_answer()


def config_snapshot(settings: Settings) -> dict[str, Any]:
    """The effective settings for the history record (secrets masked by `Settings.flat`)."""
    return settings.flat()
