"""`ResearchRunner`: a research run over one `ResearchSession`, as an async iterator of events.

    runner = ResearchRunner(workspace.new_session(question, names), question)
    async for event in runner.run(): ...

The plan: the chat model splits the question into sub-questions (research/plan.py), or, when its reply is
junk, the question's fragments do. Round 1 searches each sub-question (`ResearchSession.gather`: retrieval and
annotation, the ordinary stages, each search a turn of the session, its sources numbered after the earlier
ones and judged against its sub-question); after each round the model is asked which sub-questions still lack
evidence, and at most `research.max_rounds` more rounds search those again with the new wording it gives,
skipping sources the run already has. A round that keeps no new source ends the gathering. The report
(`ResearchSession.report`) is one synthesis over every search's kept sources, organised by sub-question, with
the ordinary answer checks; continue, re-annotate, rescue and drop work on it as on any answer.

The limits of [research] (model calls, tokens, wall seconds) are checked before each step and, for seconds,
while a search runs; the first one reached stops the gathering, is said once, and the report over what was
kept is still written (its call is kept in reserve within max_model_calls). `cancel(i)` stops sub-question i
(what its search had annotated is kept); cancelling the whole run keeps everything finished. The run's plan,
rounds, limits reached and cost are saved with the session (`Conversation.research`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import replace

from ragtui.config import ConfigError
from ragtui.events import (
    AnnotationFailed,
    AnnotationFinished,
    Event,
    LimitReached,
    Notice,
    PlanReady,
    ResearchFinished,
    RoundStarted,
    SourcesReady,
    StageFailed,
    SubQuestionChanged,
)
from ragtui.llm import usage
from ragtui.llm.chat import LLMError
from ragtui.model.research_run import Limit, ResearchRun, RunCost, SubQuestion, SubState
from ragtui.research.plan import (
    MAX_PART_CHARS,
    MAX_PARTS,
    fallback_plan,
    gap_messages,
    parse_gaps,
    parse_plan,
    plan_messages,
)
from ragtui.research.session import ResearchSession
from ragtui.sanitize import one_line


class ResearchRunner:
    """One research run: its plan (proposed, or set by the user), its rounds of searches, its report."""

    def __init__(self, session: ResearchSession, question: str, *, max_rounds: int | None = None) -> None:
        self.session = session
        self.limits = session.settings.research
        self.max_rounds = self.limits.max_rounds if max_rounds is None else max_rounds
        self.meter = usage.Usage()
        self.seconds = 0.0                   # wall seconds of the run's steps (not the user's editing)
        self._cancelled: set[int] = set()
        self._said: set[Limit] = set()
        session.keep_research(ResearchRun(question=" ".join(question.split())))

    @property
    def state(self) -> ResearchRun:
        run = self.session.research
        assert run is not None               # set in __init__; the session keeps it
        return run

    # --- steering ---------------------------------------------------------------------------

    def set_plan(self, parts: Sequence[str]) -> tuple[SubQuestion, ...]:
        """The user's plan (edited, reordered, added to): each part one line, empty ones dropped, at most
        MAX_PARTS; a plan with no part is refused (RagtuiError)."""
        from ragtui.errors import RagtuiError

        cleaned = [one_line(p)[:MAX_PART_CHARS] for p in parts]
        kept = list(dict.fromkeys(p for p in cleaned if p))[:MAX_PARTS]
        if not kept:
            raise RagtuiError("a research plan needs at least one sub-question", exit_code=2)
        by = self.state.planned_by if [s.text for s in self.state.plan] == kept else "user"
        self.session.keep_research(replace(self.state, plan=tuple(SubQuestion(p) for p in kept), planned_by=by))
        return self.state.plan

    def cancel(self, index: int) -> None:
        """Stop sub-question `index` (0-based): its search ends at the next step, what it kept stays."""
        self._cancelled.add(index)

    # --- running ----------------------------------------------------------------------------

    async def propose(self) -> AsyncGenerator[Event, None]:
        """The plan: the model's sub-questions, or the question's fragments when its reply is junk."""
        with usage.metered(self.meter):
            started = time.perf_counter()
            try:
                async with aclosing(self._propose()) as events:
                    async for event in events:
                        yield event
            finally:
                self.seconds += time.perf_counter() - started

    async def _propose(self) -> AsyncGenerator[Event, None]:
        question = self.state.question
        try:
            parts, why = parse_plan(await self.session.complete(plan_messages(question)), question)
        except (LLMError, ConfigError) as exc:
            parts, why = [], str(exc)
        by = self.session.conversation.synthesis_model
        if not parts:
            parts, by = fallback_plan(question), "fragments"
            yield Notice("warning", f"the model's plan was not used ({why}); searching "
                                    + ("the question's parts as typed" if len(parts) > 1 else "the question as typed"))
        self.session.keep_research(replace(self.state, plan=tuple(SubQuestion(p) for p in parts), planned_by=by))
        yield PlanReady(self.state.plan, by, why)

    async def run(self) -> AsyncGenerator[Event, None]:
        """Plan (unless set), gather in rounds, check for gaps, report; saved after each step and when cancelled."""
        with usage.metered(self.meter):
            started = time.perf_counter()
            try:
                async with aclosing(self._run(started)) as events:
                    async for event in events:
                        yield event
            finally:
                self.seconds += time.perf_counter() - started
                self._settle()
        yield ResearchFinished(self.state)

    async def _run(self, started: float) -> AsyncGenerator[Event, None]:
        if not self.state.plan:
            async with aclosing(self._propose()) as events:
                async for event in events:
                    yield event
        parts = [i for i in range(len(self.state.plan)) if i not in self._cancelled]
        queries = [self.state.plan[i].text for i in parts]
        round_number = 1
        while parts:
            yield RoundStarted(round_number, tuple(parts), tuple(queries))
            self.session.keep_research(replace(self.state, rounds=round_number))
            new, stop = 0, False
            for index, query in zip(parts, queries, strict=True):
                if index in self._cancelled:
                    yield self._change(index, state=SubState.CANCELLED)
                    continue
                if (limit := self._over(started, calls=int(self.session.conversation.annotation_on))) is not None:
                    async with aclosing(self._reached(limit)) as events:
                        async for event in events:
                            yield event
                    stop = True
                    break
                before = self._kept(index)
                async with aclosing(self._search(index, query, started)) as events:
                    async for event in events:
                        yield event
                        stop = stop or isinstance(event, StageFailed | LimitReached)
                new += self._kept(index) - before
                if stop:
                    break
            if stop or round_number > self.max_rounds:
                break
            if round_number > 1 and not new:
                yield Notice("info", f"round {round_number} kept no new source: the gathering ends here")
                break
            if (limit := self._over(started, calls=1)) is not None:
                async with aclosing(self._reached(limit)) as events:
                    async for event in events:
                        yield event
                break
            found, notice = await self._gaps()
            if notice is not None:
                yield notice
            gaps = [(i, q) for i, q in found if i not in self._cancelled]
            parts, queries = [i for i, _ in gaps], [q for _, q in gaps]
            round_number += 1
        self.session.save()
        async with aclosing(self.session.report()) as events:
            async for event in events:
                yield event

    async def _search(self, index: int, query: str, started: float) -> AsyncGenerator[Event, None]:
        """One search for sub-question `index`, its progress said as it goes; stopped by `cancel(index)` or the
        wall-time limit between two of its steps."""
        session = self.session
        most = session.settings.retrieve.annotate_max
        if session.conversation.annotation_on:         # every annotation call within the calls left
            most = min(most, self.limits.max_model_calls - self.meter.calls - 1)
        sub = self.state.plan[index]
        yield self._change(index, state=SubState.SEARCHING, annotated=0, found=0)
        events = session.gather(query, most=most)
        cut = False
        try:
            while True:
                left = self.limits.max_seconds - (self.seconds + time.perf_counter() - started)
                try:
                    event = await asyncio.wait_for(anext(events), max(left, 0.001))
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    cut = True
                    async with aclosing(self._reached(Limit.SECONDS)) as reached:
                        async for line in reached:
                            yield line
                    break
                yield event
                if isinstance(event, SourcesReady):
                    turn = len(session.turns)
                    yield self._change(index, state=SubState.ANNOTATING if session.conversation.annotation_on
                                       else SubState.SEARCHING, turns=(*sub.turns, turn), found=len(event.sources))
                elif isinstance(event, AnnotationFinished | AnnotationFailed):
                    current = self.state.plan[index]
                    yield self._change(index, annotated=current.annotated + 1, kept=self._kept(index))
                if index in self._cancelled:
                    break
        finally:
            await events.aclose()
        state = SubState.CANCELLED if index in self._cancelled else SubState.CUT if cut else SubState.DONE
        yield self._change(index, state=state, kept=self._kept(index))

    async def _gaps(self) -> tuple[list[tuple[int, str]], Notice | None]:
        """The model's gap check: (sub-question, new search) for each sub-question still lacking evidence, and
        the notice that its reply was not used (None when it was)."""
        run = self.state
        conversation = self.session.conversation
        quotes = [[s.quote or s.annotation for t in sub.turns for s in conversation.turns[t - 1].sources if s.kept]
                  for sub in run.plan]
        try:
            reply = await self.session.complete(gap_messages(run.question, run.plan, quotes))
        except (LLMError, ConfigError) as exc:
            reply, failed = "", str(exc)
        else:
            failed = ""
        gaps, why = parse_gaps(reply, run.plan)
        if not (why or failed):
            return gaps, None
        named = ", ".join(str(i + 1) for i, _ in gaps)
        then = f"searching again the sub-questions that kept nothing: {named}" if named else \
            "every sub-question kept a source: no more rounds"
        return gaps, Notice("warning", f"the gap check's reply was not used ({failed or why}); {then}")

    # --- the record -------------------------------------------------------------------------

    def _kept(self, index: int) -> int:
        turns = self.session.conversation.turns
        return sum(s.kept for t in self.state.plan[index].turns if t <= len(turns) for s in turns[t - 1].sources)

    def _change(self, index: int, **changes: object) -> SubQuestionChanged:
        self.session.keep_research(self.state.with_sub(index, **changes))
        return SubQuestionChanged(index, self.state.plan[index])

    def _over(self, started: float, *, calls: int) -> Limit | None:
        """The first limit the next step (making `calls` model calls, the report's kept in reserve) would pass."""
        if self.meter.calls + calls + 1 > self.limits.max_model_calls:
            return Limit.MODEL_CALLS
        if self.meter.prompt_tokens + self.meter.output_tokens >= self.limits.max_tokens:
            return Limit.TOKENS
        if self.seconds + time.perf_counter() - started >= self.limits.max_seconds:
            return Limit.SECONDS
        return None

    async def _reached(self, limit: Limit) -> AsyncGenerator[Event, None]:
        """The limit said once, recorded, and the sub-questions not searched yet marked skipped."""
        setting = {Limit.MODEL_CALLS: f"research.max_model_calls = {self.limits.max_model_calls}",
                   Limit.TOKENS: f"research.max_tokens = {self.limits.max_tokens}",
                   Limit.SECONDS: f"research.max_seconds = {self.limits.max_seconds:g}"}[limit]
        if limit not in self._said:
            self._said.add(limit)
            self.session.keep_research(replace(self.state, limits_hit=(*self.state.limits_hit, limit)))
            yield LimitReached(limit, f"the run reached its limit of {limit.value} ({setting}): gathering stops "
                                      "here; the report is written from the sources kept so far")
        for i, sub in enumerate(self.state.plan):
            if sub.state is SubState.PLANNED:
                yield self._change(i, state=SubState.SKIPPED)

    def _settle(self) -> None:
        """The cost recorded; a sub-question a cancel cut is marked cancelled; saved."""
        for i, sub in enumerate(self.state.plan):
            if sub.state in (SubState.SEARCHING, SubState.ANNOTATING):
                self._change(i, state=SubState.CANCELLED, kept=self._kept(i))
        meter = self.meter
        self.session.keep_research(replace(self.state, cost=RunCost(
            meter.calls, meter.prompt_tokens + meter.output_tokens, round(self.seconds, 3))))
        self.session.save()
