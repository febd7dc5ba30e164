"""The quick switcher (ctrl+o, and the command palette): collections and past sessions by a few letters."""

from __future__ import annotations

from textual.command import CommandPalette

from ragtui.model.conversation import SessionSummary, StopReason
from ragtui.tui.switcher import SWITCHER_PLACEHOLDER
from ragtui.tui.widgets.sources import SourcesPanel
from tests.tui.conftest import feed, main_screen, quiet_app
from tests.tui.scripted import finished_session


async def test_ctrl_o_switches_to_a_collection_by_a_few_letters(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, finished_session())
        main = main_screen(app)
        assert main.active == {"demo", "papers"}
        app.query_one("#query").focus()
        await pilot.press("ctrl+o")                  # from the query bar too: ctrl+o types nothing
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        assert app.screen.query_one("CommandInput").placeholder == SWITCHER_PLACEHOLDER
        await pilot.press(*"ppr")                    # fuzzy: p..p..r of "papers"
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, CommandPalette)
        assert main.active == {"papers"}
        assert "Searching papers only" in app.notices[-1].message


async def test_the_command_palette_offers_the_collections_too(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, finished_session())
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"collection drafts")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause()
        assert main_screen(app).active == {"drafts"}


async def test_a_past_question_with_brackets_is_shown_as_written(snapshot_settings) -> None:
    question = "what does [1] mean in [/] and [bold]x[/bold]?"
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, finished_session())
        main = main_screen(app)

        async def past_sessions() -> list[SessionSummary]:
            return [SessionSummary(7, "2026-01-02T10:00:00", question, ("demo",), StopReason.STOP, 5, 3)]

        main.past_sessions = past_sessions          # the history store's answer, as a stored session gives it
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("ctrl+o")
        await pilot.pause()
        await pilot.press(*"mean")
        await pilot.pause(0.5)
        options = app.screen.query_one("CommandList")
        shown = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert any(f"Session 7: {question}" in line for line in shown), shown
