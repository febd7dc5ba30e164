from __future__ import annotations

from collections.abc import Callable

from ragtui.config import Settings
from ragtui.tui.app import RagtuiApp


async def test_panes_exist_and_q_quits(make_settings: Callable[..., Settings]) -> None:
    app = RagtuiApp(make_settings())
    async with app.run_test(size=(120, 30)) as pilot:
        for selector in ("#collections", "#query", "#sources", "#synthesis", "#status"):
            assert app.query_one(selector).display
        assert app.focused is app.query_one("#query")
        await pilot.press("tab", "q")
        assert app.return_code == 0  # q quit the app (None: it would still be running)
    assert app.return_code == 0
