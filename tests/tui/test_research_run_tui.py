"""A research run driven by keys: the real engine behind the TUI over an ingested corpus, every model call to the
fake Ollama server. The plan is edited in the plan editor before it runs; each sub-question's progress shows
above the sources; X cancels the sub-question being searched and esc the whole run, finished evidence kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.history import HistoryStore
from ragtui.model.research_run import SubState
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.plan_editor import PlanEditor
from ragtui.tui.widgets.plan_progress import PlanProgress
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.synthesis import SynthesisView
from tests.fake_ollama import FakeOllama
from tests.research_run_fakes import ResearchModel
from tests.tui.conftest import main_screen
from tests.tui.test_session import ingest, settle, write_corpus

QUESTION = "how do pumps start and when do seals wear out"
PLAN = "1. How do centrifugal pumps start?\n2. When do pump seals wear out?\n3. What opens before the pumps run?"


@pytest.fixture
async def corpus_settings(make_settings: Callable[..., Settings], tmp_path: Path) -> Callable[..., Settings]:
    folder = write_corpus(tmp_path)
    ingested = False

    async def build(*overrides: str) -> Settings:
        nonlocal ingested
        settings = make_settings(*overrides)
        if not ingested:
            await ingest(settings, folder)
            ingested = True
        return settings

    return build   # type: ignore[return-value]


async def until(pilot, check: Callable[[], bool], what: str) -> None:
    for _ in range(400):
        if check():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"never: {what}")


async def test_the_plan_is_edited_by_keys_then_run_with_its_progress_shown(
        corpus_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = model = ResearchModel(plan=PLAN)
    app = RagtuiApp(await corpus_settings(), cursor_blink=False)     # type: ignore[misc]
    async with app.run_test(size=(100, 30)) as pilot:
        view = main_screen(app).research
        await settle(app, pilot)
        await pilot.press("slash", *QUESTION, "ctrl+t")
        await until(pilot, lambda: isinstance(app.screen, PlanEditor), "the plan editor")
        editor = app.screen
        assert isinstance(editor, PlanEditor) and editor.parts == [p[3:] for p in PLAN.splitlines()]
        await pilot.press("d")                               # drop "How do centrifugal pumps start?"
        await pilot.press("a", *"How much pressure starts a pump?", "enter")    # added last
        await pilot.press("K")                               # moved up, above "What opens before ..."
        await pilot.press("up", "e", *" first", "enter")     # edit "When do pump seals wear out?"
        assert editor.parts == ["When do pump seals wear out? first", "How much pressure starts a pump?",
                                "What opens before the pumps run?"]
        await pilot.press("enter")                           # run it
        await settle(app, pilot)
        session = view.session
        assert session is not None and session.conversation.research is not None
        run = session.conversation.research
        assert [s.text for s in run.plan] == editor.parts and run.planned_by == "user"
        assert [s.state for s in run.plan] == [SubState.DONE] * 3 and model.plans == 1
        progress = str(app.query_one(PlanProgress).render())
        assert "1. When do pump seals wear out? first · done," in progress and "calls," in progress
        assert session.conversation.is_report and session.turn.answer
        shown = app.query_one(SourcesPanel).sources             # the report with every search's sources
        assert set(shown) == {s.number for s in session.conversation.all_sources}
        assert app.query_one(SynthesisView).text == session.turn.answer
        stored = HistoryStore(session.settings.data_dir).load(session.id or 0)
        assert stored.research == run


async def test_x_cancels_one_sub_question_and_esc_the_whole_run_keeping_finished_evidence(
        corpus_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = ResearchModel(plan=PLAN, slow="seals")     # the seals extracts take seconds each
    app = RagtuiApp(await corpus_settings("research.edit_plan=false", "annotation.concurrency=1"),  # type: ignore[misc]
                    cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        view = main_screen(app).research
        await settle(app, pilot)
        await pilot.press("slash", *QUESTION, "ctrl+t")

        def slow_part() -> int | None:
            """The sub-question annotating a seals extract (0.5 s a word: it waits for the cancel), if one is."""
            runner = view.runner
            if runner is None or not any("seals" in s.chunk.text for s in runner.session.sources):
                return None
            return next((i for i, s in enumerate(runner.state.plan) if s.state is SubState.ANNOTATING), None)

        await until(pilot, lambda: slow_part() is not None, "a sub-question annotating a seals extract")
        cancelled = slow_part()
        await pilot.press("tab", "X")                        # to the sources pane, then cancel the one searching
        await settle(app, pilot)
        session = view.session
        assert session is not None and session.conversation.research is not None and cancelled is not None
        states = [s.state for s in session.conversation.research.plan]
        assert states == [SubState.CANCELLED if i == cancelled else SubState.DONE for i in range(3)]
        assert session.turn.answer and session.conversation.is_report
        assert f"{cancelled + 1}. " in str(app.query_one(PlanProgress).render())
        assert "· cancelled," in str(app.query_one(PlanProgress).render())

        await pilot.press("slash", "ctrl+t")                 # the same question again, cancelled as a whole
        await until(pilot, lambda: view.session is not session and slow_part() is not None, "annotating again")
        cancelled = slow_part()
        first = view.session
        await pilot.press("escape", "escape")                # leave the query bar, then cancel the run
        await settle(app, pilot)
        assert first is not None and cancelled is not None
        stored = HistoryStore(first.settings.data_dir).load(first.id or 0)
        assert stored.research is not None and not stored.is_report
        states = [s.state for s in stored.research.plan]
        assert states[cancelled] is SubState.CANCELLED and set(states[:cancelled]) <= {SubState.DONE}
        assert set(states[cancelled + 1:]) <= {SubState.PLANNED}
        assert sum(s.kept for s in stored.research.plan) == sum(s.kept for s in stored.all_sources)
        assert "· cancelled," in str(app.query_one(PlanProgress).render())
