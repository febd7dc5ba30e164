from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.events import Event, IngestFinished
from ragtui.ingest.report import IngestReport

SMALL = ("chunk.size_tokens=64", "embed.backoff_s=0.01", "embed.retries=2")


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(*SMALL)


def collect(agen: Any) -> tuple[list[Event], IngestReport]:
    async def drain() -> list[Event]:
        return [e async for e in agen]

    events = asyncio.run(drain())
    finished = [e for e in events if isinstance(e, IngestFinished)]
    assert len(finished) == 1 and events[-1] is finished[0]
    return events, finished[0].report


def ingest(settings: Settings, paths: Sequence[Path], name: str = "c", **kw: Any) -> IngestReport:
    from ragtui.ingest.pipeline import ingest_paths

    return collect(ingest_paths(settings, name, list(paths), **kw))[1]


def ingest_docs(settings: Settings, docs: Iterable[tuple[str, str]], name: str = "c") -> IngestReport:
    from ragtui.ingest.pipeline import ingest_documents

    return collect(ingest_documents(settings, name, docs))[1]
