"""Cancelling a research run, one sub-question or the whole run, over the fake Ollama server's HTTP: what was
finished is kept, in the report and in the history."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ragtui.config import Settings
from ragtui.events import AnnotationFinished, Event, SubQuestionChanged
from ragtui.history import HistoryStore
from ragtui.model.research_run import SubState
from ragtui.research.deep import ResearchRunner
from ragtui.research.session import ResearchSession
from tests.fake_ollama import FakeOllama
from tests.research_run_fakes import QUESTION, ResearchModel, WordRetrieval


def runner(settings: Settings) -> ResearchRunner:
    session = ResearchSession(settings, QUESTION, ["docs"], history=HistoryStore(settings.data_dir),
                              retrieve=WordRetrieval())
    return ResearchRunner(session, QUESTION)


async def test_a_cancelled_sub_question_keeps_what_it_had_annotated_and_the_run_goes_on(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = ResearchModel()
    run = runner(make_settings("annotation.concurrency=1"))
    events: list[Event] = []
    async for event in run.run():
        events.append(event)
        if isinstance(event, AnnotationFinished) and run.state.plan[1].state is SubState.ANNOTATING:
            run.cancel(1)                    # the user stops sub-question 2 after its first source
    plan = run.state.plan
    assert [s.state for s in plan] == [SubState.DONE, SubState.CANCELLED, SubState.DONE]
    assert (plan[0].kept, plan[1].kept) == (2, 1)
    conversation = run.session.conversation
    assert [s.number for s in conversation.answer_sources] == [1, 2, 3]      # [4] was never annotated: not kept
    assert conversation.source(4).state.value == "pending"
    assert sorted(conversation.turn.citations) == [1, 2, 3] and conversation.is_report
    stored = HistoryStore(run.session.settings.data_dir).load(run.session.id or 0)
    assert stored.research == run.state
    said = [e.sub.state for e in events if isinstance(e, SubQuestionChanged) and e.index == 1]
    assert said[-1] is SubState.CANCELLED and SubState.SEARCHING in said


async def test_cancelling_the_whole_run_keeps_the_finished_evidence_in_the_history(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = ResearchModel(slow="gnuplot")      # sub-question 2's annotations take seconds
    run = runner(make_settings())
    started = asyncio.Event()

    async def consume() -> None:
        async for event in run.run():
            if isinstance(event, SubQuestionChanged) and event.index == 1 and event.sub.state is SubState.ANNOTATING:
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await run.session.aclose()
    stored = HistoryStore(run.session.settings.data_dir).load(run.session.id or 0)
    assert stored.research is not None
    assert [s.state for s in stored.research.plan] == [SubState.DONE, SubState.CANCELLED, SubState.PLANNED]
    assert [s.number for s in stored.all_sources if s.kept] == [1, 2]
    assert stored.research.cost.model_calls >= 3 and stored.research.cost.seconds > 0
