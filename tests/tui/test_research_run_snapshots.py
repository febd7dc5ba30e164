"""Snapshots of a research run in the TUI: the plan editor before a run, and each sub-question's progress above
the sources while the run gathers. Each at 80x24 and 200x50; the engine's events are fed (no network)."""

from __future__ import annotations

import dataclasses

import pytest

from ragtui.events import Event, PlanReady, RoundStarted, SubQuestionChanged
from ragtui.model.research_run import SubQuestion, SubState
from ragtui.tui.screens.plan_editor import PlanEditor
from ragtui.tui.widgets.sources import SourcesPanel
from tests.tui.conftest import feed, quiet_app
from tests.tui.scripted import finished_session

SIZES = [(80, 24), (200, 50)]
QUESTION = "How does natural selection work, what do breeders do, and what does the fossil record show?"
PLAN = (SubQuestion("How does natural selection preserve variations?"),
        SubQuestion("How do breeders accumulate small differences?"),
        SubQuestion("Why does the fossil record lack intermediate forms?"))


def gathering() -> list[Event]:
    """The plan, round 1, sub-question 1 done, sub-question 2 annotating its sources, sub-question 3 waiting."""
    search = [e for e in finished_session() if type(e).__name__ in ("RetrievalStarted", "SourcesReady",
                                                                     "AnnotationStarted", "AnnotationFinished")]
    return [PlanReady(PLAN, "chat"), RoundStarted(1, (0, 1, 2), tuple(s.text for s in PLAN)),
            SubQuestionChanged(0, dataclasses.replace(PLAN[0], state=SubState.DONE, turns=(1,), found=4,
                                                      annotated=4, kept=3)),
            *search[:6],
            SubQuestionChanged(1, dataclasses.replace(PLAN[1], state=SubState.ANNOTATING, turns=(2,), found=5,
                                                      annotated=2, kept=1))]


@pytest.mark.parametrize("size", SIZES)
def test_plan_editor(snap_compare, snapshot_settings, size) -> None:
    async def run_before(pilot) -> None:
        await feed(pilot.app, [])
        await pilot.app.push_screen(PlanEditor(QUESTION, [s.text for s in PLAN], "chat"))
        await pilot.press("down")
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_progress_of_each_sub_question(snap_compare, snapshot_settings, size) -> None:
    async def run_before(pilot) -> None:
        await feed(pilot.app, gathering())
        pilot.app.query_one(SourcesPanel).active_table.focus()
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=size, run_before=run_before)
