"""Snapshots of a conversation: a follow-up turn, the why-this-source details, the model picker.

A saved two-turn session is reopened from the history (no network): what is on
screen is what reopening restores. Each at 80x24 and 160x48.
"""

from __future__ import annotations

import pytest

from ragtui.history import HistoryStore
from ragtui.tui.widgets.sources import SourcesPanel
from tests.tui.conftest import COLLECTIONS, handled, main_screen, probed, quiet_app
from tests.tui.scripted import conversation_record

SIZES = [(80, 24), (160, 48)]


async def _reopened(pilot) -> None:
    app = pilot.app
    screen = main_screen(app)
    screen.research.post_message(probed(app.settings, ("chat:latest", "annotator:latest",
                                                       "nomic-embed-text:latest")))
    screen.show_collections(COLLECTIONS)
    session_id = HistoryStore(app.settings.data_dir).save(conversation_record()).id
    assert session_id is not None
    await screen.research.reopen(session_id)
    await handled(screen.research)
    app.query_one(SourcesPanel).active_table.focus()
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()     # the tab underline slides to the relabelled tab


@pytest.mark.parametrize("size", SIZES)
def test_follow_up_turn(snap_compare, snapshot_settings, size) -> None:
    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=size, run_before=_reopened)


@pytest.mark.parametrize("size", SIZES)
def test_details_view(snap_compare, snapshot_settings, size) -> None:
    async def run_before(pilot) -> None:
        await _reopened(pilot)
        await pilot.press("down")          # [7]
        await pilot.press("w")
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_model_picker(snap_compare, snapshot_settings, size) -> None:
    async def run_before(pilot) -> None:
        await _reopened(pilot)
        await pilot.press("m")
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=size, run_before=run_before)
