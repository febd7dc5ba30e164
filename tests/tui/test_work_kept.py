"""Cancelling never loses finished work, and typing the next question runs no action.

The real engine behind the TUI, the LLM over HTTP to the fake Ollama server, driven by keys.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

from ragtui.config import Settings
from ragtui.history import HistoryStore
from ragtui.model.conversation import AnnotationState
from ragtui.tui.app import RagtuiApp
from ragtui.tui.widgets.query import QueryInput
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.status import StatusLine
from tests.fake_ollama import FakeOllama, Reply
from tests.tui.conftest import main_screen
from tests.tui.test_session import QUERY, Script, ask, corpus, script, settings, settle  # noqa: F401

SLOW = 3.0   # seconds an annotation the test cancels would take


def slow_except_pumps(note: str) -> Any:
    """Annotate the centrifugal-pumps extract at once (saying `note`); every other one slowly."""
    def respond(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        if "EXTRACT:" not in prompt:
            return Reply.text("Pumps start at 3 bar [1].")
        if "Centrifugal" in prompt.split("EXTRACT:", 1)[1]:
            return Reply.text(f'"Centrifugal pumps start at 3 bar." {note}')
        return Reply(pieces=["IRRELEVANT!!!"], delay=SLOW)
    return respond


async def until(pilot, condition) -> None:
    for _ in range(3000):
        if condition():
            return
        await pilot.pause(0.01)
    raise AssertionError("the condition never held")


def annotated(panel: SourcesPanel, note: str) -> bool:
    return any(note in s.annotation for s in panel.sources.values())


async def test_escape_during_the_first_annotation_keeps_every_source_relevant(
        settings: Settings, fake_ollama: FakeOllama) -> None:  # noqa: F811
    fake_ollama.responder = slow_except_pumps("First reading.")
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await pilot.press(*QUERY, "enter")
        panel = app.query_one(SourcesPanel)
        await until(pilot, lambda: annotated(panel, "First reading."))
        await pilot.press("escape")
        await settle(app, pilot)
        session = main.research.session
        assert session is not None and not main.research.busy
        n = len(session.sources)
        assert n >= 3
        assert panel.counts() == {"relevant": n, "filtered": 0, "all": n}   # nothing moved to Filtered
        states = sorted(s.state for s in panel.sources.values())
        assert states == sorted([AnnotationState.RELEVANT] + [AnnotationState.PENDING] * (n - 1))
        assert all(not s.error for s in panel.sources.values())
        assert [s.state for s in session.sources] == [panel.sources[s.number].state for s in session.sources]
        stored = HistoryStore(settings.data_dir).load(session.id)
        kept = [(s.state, s.annotation) for s in stored.all_sources]
        assert kept == [(s.state, s.annotation) for s in session.sources]
        assert stored.turn.stop_reason == "cancelled"
        status = app.query_one(StatusLine)
        assert str(status.render()).startswith("cancelled")
        pending = next(s.number for s in session.sources if s.state is AnnotationState.PENDING)
        assert str(app.query_one("#relevant-table", DataTable).get_cell(str(pending), "state")) == "not annot."
        # s writes the answer from every source: the unannotated ones count as relevant
        await pilot.press("tab", "s")
        await settle(app, pilot)
        assert session.turn.prompt_numbers == tuple(sorted(s.number for s in session.sources))


async def test_escape_during_reannotate_all_keeps_the_earlier_annotations(
        settings: Settings, script: Script, fake_ollama: FakeOllama) -> None:  # noqa: F811
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await ask(app, pilot)
        panel = app.query_one(SourcesPanel)
        session = main.research.session
        before_counts = panel.counts()
        assert before_counts["filtered"] == 1 and before_counts["relevant"] >= 2
        before = {s.number: (s.state, s.annotation) for s in session.sources}

        fake_ollama.responder = slow_except_pumps("A second reading.")
        await pilot.press("tab")            # from the query bar to the sources
        assert isinstance(app.focused, type(panel.active_table))
        await pilot.press("R")
        await until(pilot, lambda: annotated(panel, "A second reading."))
        await pilot.press("escape")
        await settle(app, pilot)
        assert not main.research.busy
        assert panel.counts() == before_counts
        after = {s.number: (s.state, s.annotation) for s in session.sources}
        changed = [n for n in after if after[n] != before[n]]
        assert len(changed) == 1 and "A second reading." in after[changed[0]][1]
        assert {n: (s.state, s.annotation) for n, s in panel.sources.items()} == after
        stored = HistoryStore(settings.data_dir).load(session.id)
        assert {s.number: (s.state, s.annotation) for s in stored.all_sources} == after
        assert stored.turn.stop_reason == "stop" and stored.turn.answer == session.answer


async def test_typing_the_next_question_after_an_answer_runs_no_action(
        settings: Settings, script: Script) -> None:  # noqa: F811
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(80, 24)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await pilot.press(*QUERY, "enter")
        await settle(app, pilot)
        first = main.research.session
        assert first is not None and first.answer
        bar = app.query_one(QueryInput)
        assert app.focused is bar and bar.selected_text == QUERY   # kept, selected: typing replaces it
        question = "his quiet ways? r/x/s/R/y/c/h/i/n/b/t/1/2/3 q!"
        await pilot.press(*question)
        await pilot.pause()
        assert bar.value == question
        assert app.screen is main and len(app.screen_stack) == 1 and app.is_running
        assert main.research.session is first and not main.research.busy
        await pilot.press("enter")
        await settle(app, pilot)
        assert main.research.session is first and len(first.turns) == 2 and first.turn.query == question  # a follow-up
