"""A damaged history file: the TUI says so once, answers questions without saving them, keeps `h` shut, and
never writes to the file (the real engine behind the app, the fake Ollama on loopback)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.history import HistoryScreen
from ragtui.tui.widgets.status import StatusLine
from ragtui.tui.widgets.synthesis import SynthesisView
from tests.fake_ollama import FakeOllama
from tests.test_damaged_history import damaged_history, garbage, truncated
from tests.tui.conftest import main_screen
from tests.tui.test_session import ask, settle


@pytest.mark.parametrize("damage", [truncated, garbage])
async def test_the_tui_runs_without_history_and_says_why(tmp_path: Path, make_settings: Callable[..., Settings],
                                                         fake_ollama: FakeOllama,
                                                         damage: Callable[[bytes], bytes]) -> None:
    settings = make_settings()
    data = await damaged_history(tmp_path, settings, damage)
    path = settings.data_dir / "history.sqlite3"
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot)
        [notice] = [n for n in app.notices if "is damaged" in n.message]
        assert notice.severity == "error" and f"history file {path} is damaged" in notice.message
        assert "sessions are not saved" in notice.message and f"mv {path}" in notice.message
        await ask(app, pilot)
        main = main_screen(app)
        assert main.research.session is not None and main.research.session.id is None and main.research.session.answer
        assert app.query_one(SynthesisView).text == main.research.session.answer
        assert "not saved" in str(app.query_one(StatusLine).render())
        assert len([n for n in app.notices if "is damaged" in n.message]) == 1   # said once
        await pilot.press("escape", "h")
        await settle(app, pilot)
        assert not any(isinstance(screen, HistoryScreen) for screen in app.screen_stack)
        assert app.notices[-1].message.startswith("History unavailable: history file")
        assert app.is_running
    assert app.return_code in (0, None)
    assert path.read_bytes() == data
    assert sorted(p.name for p in path.parent.iterdir()) == ["collections", "history.sqlite3"]
