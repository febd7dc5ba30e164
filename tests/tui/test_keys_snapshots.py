"""Snapshots of the keys a user sets and the motions in the lists, at 80x24 (cursor blink off, nothing running)."""

from __future__ import annotations

from ragtui.tui.widgets.sources import SourcesPanel
from tests.tui.conftest import feed, quiet_app
from tests.tui.scripted import finished_session


def test_help_shows_the_users_keys_80x24(snap_compare, snapshot_settings) -> None:
    settings = snapshot_settings("keys.synthesize=S", "keys.reannotate_selected=f5, alt+r")

    async def run_before(pilot) -> None:
        await feed(pilot.app, finished_session())
        pilot.app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(quiet_app(settings), terminal_size=(80, 24), run_before=run_before)


def test_vim_motions_in_the_sources_list_80x24(snap_compare, snapshot_settings) -> None:
    async def run_before(pilot) -> None:
        await feed(pilot.app, finished_session())
        pilot.app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("3", "G", "k")            # the All tab, the last source, one up: source [4]
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(80, 24), run_before=run_before)


def test_the_quick_switcher_80x24(snap_compare, snapshot_settings) -> None:
    async def run_before(pilot) -> None:
        await feed(pilot.app, finished_session())
        pilot.app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("ctrl+o")
        await pilot.pause()
        pilot.app.screen.query_one("CommandInput").cursor_blink = False
        await pilot.press(*"pa")
        await pilot.pause(0.5)

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(80, 24), run_before=run_before)


def test_a_filtered_sources_list_80x24(snap_compare, snapshot_settings) -> None:
    async def run_before(pilot) -> None:
        await feed(pilot.app, finished_session())
        pilot.app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("3", "f")
        pilot.app.query_one("#source-filter").cursor_blink = False
        await pilot.press(*"selection", "enter")
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(80, 24), run_before=run_before)
