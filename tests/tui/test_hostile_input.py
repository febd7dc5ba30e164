"""The TUI never crashes on what a user types or a document's name says (markup and controls are inert)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragtui.config import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.ingest import IngestScreen
from ragtui.tui.widgets.status import StatusLine
from tests.fake_ollama import FakeOllama
from tests.tui.test_session import settle


async def test_markup_typed_as_a_collection_name_is_refused_not_a_crash(make_settings: Callable[..., Settings],
                                                                       tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "[@click=app.quit]x\x1b]0;t\x07[bold.md").write_text("Pumps start slowly when the valve is closed. " * 5)
    app = RagtuiApp(make_settings(), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("escape", "i")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, IngestScreen)
        screen.query_one("#ingest-path").value = str(docs)
        await pilot.press("tab", *"[/]", "enter")
        await settle(app, pilot)
        assert "invalid collection name '[/]'" in str(screen.query_one("#ingest-hint").render())
        screen.query_one("#ingest-collection").value = "ok"
        await pilot.press("enter")
        await settle(app, pilot)
        assert screen.changed and "Finished" in str(screen.query_one("#ingest-hint").render())
    assert app.return_code in (0, None)


async def test_a_tags_answer_that_is_not_json_shows_ollama_down_and_the_app_stays_up(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.tags_body = b"<html>proxy error</html>"
    app = RagtuiApp(make_settings(), cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot)
        status = app.query_one(StatusLine)
        assert [s.reachable for s in status.servers] == [False] and "down" in str(status.render())
        note = str(app.query_one("#synthesis-banner").render())
        assert "/api/tags" in note and "not JSON" in note
        assert app.is_running
    assert app.return_code in (0, None)
