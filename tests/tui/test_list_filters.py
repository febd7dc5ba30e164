"""Filter-as-you-type in the sources and history lists."""

from __future__ import annotations

from ragtui.model.conversation import SessionSummary, StopReason
from ragtui.tui.screens.history import HistoryScreen
from ragtui.tui.widgets.sources import SourcesPanel
from tests.tui.conftest import feed, quiet_app
from tests.tui.scripted import finished_session


async def test_typing_a_filter_keeps_the_sources_holding_every_word(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, finished_session())
        panel = app.query_one(SourcesPanel)
        panel.active_table.focus()
        await pilot.press("3", "f")
        assert app.focused is app.query_one("#source-filter")
        await pilot.press(*"EXPERIMENTS")            # the file name of source [4]; case does not matter
        table = panel.active_table
        kept = [int(str(key.value)) for key in table.rows]
        assert kept == [4]
        assert str(panel.query_one("#source-tabs").get_tab("all").label) == "All 1/5"
        await pilot.press("enter")                   # back to the rows, the filter kept
        assert app.focused is table and table.row_count == 1
        await pilot.press("f", "escape")             # esc clears it
        assert app.focused is panel.active_table and panel.active_table.row_count == 5
        assert str(panel.query_one("#source-tabs").get_tab("all").label) == "All 5"


async def test_a_filter_that_keeps_nothing_says_so(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, finished_session())
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("f", *"zebra quux")
        assert app.query_one(SourcesPanel).active_table.row_count == 0
        assert "every word of the filter: zebra quux" in str(app.query_one("#source-detail").render())


def _summary(number: int, query: str, collections: tuple[str, ...]) -> SessionSummary:
    return SessionSummary(id=number, created_at=f"2026-01-0{number}T10:00:00", query=query,
                          collections=collections, stop_reason=StopReason.STOP, sources=5, relevant=3)


async def test_typing_a_filter_in_the_history_keeps_the_matching_sessions(snapshot_settings) -> None:
    sessions = [_summary(3, "how do pumps start", ("docs",)), _summary(2, "when do seals wear out", ("docs",)),
                _summary(1, "pump seals and valves", ("papers",))]
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(HistoryScreen(app.workspace, sessions))
        await pilot.pause()
        await pilot.press("slash", *"seals")
        table = app.screen.query_one("#history-table")
        assert [str(k.value) for k in table.rows] == ["2", "1"]
        await pilot.press("space", *"papers")
        assert [str(k.value) for k in table.rows] == ["1"]
        await pilot.press("enter", "enter")          # back to the rows, then reopen the one kept
        await pilot.pause()
        assert not isinstance(app.screen, HistoryScreen)
