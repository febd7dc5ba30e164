"""A question typed while the start-up warm-up still imports the engine (seconds on a first start) shows the
state word "loading the engine" at once, instead of nothing until retrieval starts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from ragtui.config import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.widgets.status import Activity, StatusLine
from tests.tui.conftest import main_screen
from tests.tui.test_session import QUERY, ingest, settle, write_corpus


async def test_a_question_typed_while_the_engine_loads_says_so(make_settings: Callable[..., Settings],
                                                               tmp_path: Path) -> None:
    settings = make_settings()
    await ingest(settings, write_corpus(tmp_path))
    app = RagtuiApp(settings, cursor_blink=False)
    importing = asyncio.Event()
    release = asyncio.Event()
    real_import = app.workspace._import

    async def slow_import(load: Callable[[], None]) -> None:   # the warm-up's import, held until released
        importing.set()
        await release.wait()
        await real_import(load)

    app.workspace._import = slow_import  # type: ignore[method-assign]
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await asyncio.wait_for(importing.wait(), 60)
        await pilot.pause()
        main.active = {"docs"}
        await pilot.press("slash", *QUERY, "enter")
        await pilot.pause()
        status = app.query_one(StatusLine)
        assert status.state is Activity.LOADING
        assert str(status.render()).startswith("loading the engine (once per start)")
        release.set()
        await settle(app, pilot)
        assert main.research.session is not None and main.research.session.answer
        assert status.state is Activity.DONE
