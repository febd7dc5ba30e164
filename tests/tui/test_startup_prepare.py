"""At start-up the TUI opens the stores of the collections its first query will search, even when listing the
collections outlasts the engine's imports (at a million chunks it can): the opening waits for the listing, so
it does not open the empty set that the active collections were before it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.model.collection import CollectionInfo
from ragtui.tui.app import RagtuiApp
from ragtui.tui.engine_door import AsyncWorkspace
from tests.tui.test_session import ingest, settle, write_corpus


async def test_the_stores_opened_at_start_up_are_the_listed_collections(
        make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_settings()
    await ingest(settings, write_corpus(tmp_path))
    warm = asyncio.Event()
    prepared: list[list[str]] = []
    warm_up, collections, prepare = AsyncWorkspace.warm_up, AsyncWorkspace.collections, AsyncWorkspace.prepare

    async def warmed(self: AsyncWorkspace) -> None:
        await warm_up(self)
        warm.set()

    async def listed_after_the_imports(self: AsyncWorkspace) -> list[CollectionInfo]:
        await warm.wait()
        await asyncio.sleep(0.2)       # and a little later still: the engine worker has gone on by then
        return await collections(self)

    async def recorded(self: AsyncWorkspace, names: list[str]) -> None:
        prepared.append(list(names))
        await prepare(self, names)

    monkeypatch.setattr(AsyncWorkspace, "warm_up", warmed)
    monkeypatch.setattr(AsyncWorkspace, "collections", listed_after_the_imports)
    monkeypatch.setattr(AsyncWorkspace, "prepare", recorded)
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert prepared == [["docs"]]
