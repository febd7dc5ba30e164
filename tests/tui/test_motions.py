"""Vim motions in the lists (j / k, g / G, ctrl+d / ctrl+u), and never in a field that takes typing."""

from __future__ import annotations

from ragtui.tui.screens.history import HistoryScreen
from ragtui.tui.screens.source_viewer import SourceViewer
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.workspace import DocumentView
from tests.tui.conftest import feed, quiet_app
from tests.tui.scripted import finished_session, make_sources


async def test_vim_motions_move_the_cursor_in_the_sources_list(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, finished_session())
        panel = app.query_one(SourcesPanel)
        panel.active_table.focus()
        await pilot.press("3")                       # the All tab: five sources
        table = panel.active_table
        assert table.row_count == 5 and table.cursor_row == 0
        await pilot.press("G")
        assert table.cursor_row == 4 and panel.selected().number == 5
        await pilot.press("k", "k")
        assert table.cursor_row == 2
        await pilot.press("g")
        assert table.cursor_row == 0
        await pilot.press("j")
        assert table.cursor_row == 1
        await pilot.press("ctrl+d")
        assert table.cursor_row > 1
        await pilot.press("ctrl+u", "ctrl+u")
        assert table.cursor_row == 0


async def test_motion_keys_type_in_the_query_bar(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, finished_session())
        query = app.query_one("#query")
        query.focus()
        query.value = ""
        await pilot.press(*"jkgG")
        assert query.value == "jkgG"
        await pilot.press(*" and/or N f b 1")    # the screen's keys that move the focus (priority bindings) too
        assert query.value == "jkgG and/or N f b 1"


async def test_vim_motions_in_the_collections_and_history_lists(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(120, 30)) as pilot:
        await feed(app, finished_session())
        listing = app.query_one("#collections")
        listing.focus()
        await pilot.press("G")
        assert listing.index == 2
        await pilot.press("k")
        assert listing.index == 1
        await pilot.press("g")
        assert listing.index == 0
        await app.push_screen(HistoryScreen(app.workspace, []))
        await pilot.pause()
        await pilot.press("j", "G", "g")             # an empty list: nothing to move, nothing breaks
        assert isinstance(app.screen, HistoryScreen)


async def test_vim_motions_in_the_source_viewer(snapshot_settings) -> None:
    source = make_sources()[0]
    before = "".join(f"Line {i} before the chunk.\n" for i in range(1, 60))
    text = before + source.chunk.text + "\n" + "".join(f"Line {i} after it.\n" for i in range(1, 60))
    document = DocumentView(text, len(before), len(before) + len(source.chunk.text))
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(SourceViewer(source, document, cursor_blink=False))
        await pilot.pause()
        area = app.screen.query_one("#viewer-text")
        await pilot.press("g")
        assert area.cursor_location == (0, 0)
        await pilot.press("j", "j")
        assert area.cursor_location[0] == 2
        await pilot.press("k")
        assert area.cursor_location[0] == 1
        await pilot.press("ctrl+d")                  # half a page, and the text is still all there (read-only)
        assert area.cursor_location[0] > 3 and area.text == app.screen.text
        await pilot.press("ctrl+u", "ctrl+u")
        assert area.cursor_location[0] == 0
        await pilot.press("G")
        assert area.cursor_location == area.document.end
