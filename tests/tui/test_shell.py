from __future__ import annotations

from collections.abc import Callable

from ragtui.config import Settings
from ragtui.tui.app import RagtuiApp


async def test_panes_exist_and_q_quits(make_settings: Callable[..., Settings]) -> None:
    app = RagtuiApp(make_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        for selector in ("#collections", "#query", "#sources", "#synthesis", "#status"):
            assert app.query_one(selector).display
        assert app.focused is app.query_one("#query")
        await pilot.press("tab", "q")
    assert app.return_code == 0 or app.return_code is None


def test_snapshot_shell(snap_compare, make_settings: Callable[..., Settings]) -> None:
    app = RagtuiApp(make_settings("ollama.host=http://127.0.0.1:9"))
    assert snap_compare(app, terminal_size=(80, 24))
