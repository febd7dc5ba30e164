from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.events import Event, IngestFinished
from ragtui.model.collection import IngestReport
from ragtui.workspace import Workspace

SMALL = ("chunk.size_tokens=64", "embed.backoff_s=0.01", "embed.retries=2")


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(*SMALL)


def collect(settings: Settings, events_of: Callable[[Workspace], AsyncIterator[Event]]) -> tuple[list[Event],
                                                                                                IngestReport]:
    """Every event of one ingest through a workspace of its own (closed after), and the final report."""
    async def drain() -> list[Event]:
        async with Workspace(settings) as workspace:
            return [e async for e in events_of(workspace)]

    events = asyncio.run(drain())
    finished = [e for e in events if isinstance(e, IngestFinished)]
    assert len(finished) == 1 and events[-1] is finished[0]
    return events, finished[0].report


def ingest_events(settings: Settings, paths: Sequence[Path], name: str = "c",
                  **kw: Any) -> tuple[list[Event], IngestReport]:
    return collect(settings, lambda workspace: workspace.ingest(list(paths), name, **kw))


def ingest(settings: Settings, paths: Sequence[Path], name: str = "c", **kw: Any) -> IngestReport:
    return ingest_events(settings, paths, name, **kw)[1]


def ingest_docs(settings: Settings, docs: Iterable[tuple[str, str]], name: str = "c") -> IngestReport:
    return collect(settings, lambda workspace: workspace.ingest_documents(name, docs))[1]
