"""Ingest progress moves with each embedding call, not only when a page of calls (embed.batch_size x 8
chunks) is stored: with a slow embedder the embedded count read "0" for minutes and the first ETA was far off."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragtui.config import Settings
from ragtui.events import IngestFinished, IngestProgress
from ragtui.ingest.pipeline import EMBED_PAGES, PROGRESS_EVERY_S
from ragtui.workspace import Workspace
from tests.fake_ollama import FakeOllama


async def test_the_embedded_count_moves_with_each_embedding_call(make_settings: Callable[..., Settings],
                                                                 fake_ollama: FakeOllama, tmp_path: Path) -> None:
    batch = 2
    settings = make_settings(f"embed.batch_size={batch}")
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(40):
        (folder / f"note{i:02}.txt").write_text(f"Note {i} on pump number {i} and its priming valve.\n",
                                                 encoding="utf-8")
    fake_ollama.embed_delay = PROGRESS_EVERY_S * 1.5        # each call outlasts the progress throttle
    progress: list[IngestProgress] = []
    async with Workspace(settings) as workspace:
        async for event in workspace.ingest([folder], "notes"):
            if isinstance(event, IngestProgress):
                progress.append(event)
            elif isinstance(event, IngestFinished):
                report = event.report
    page = batch * EMBED_PAGES
    assert report.chunks_embedded == 40
    moving = [p for p in progress if 0 < p.embedded < page]             # before the first page is stored
    assert moving and moving[0].embedded % batch == 0
    assert all(p.eta_s is not None and p.embed_rate > 0 for p in moving)
    counts = [p.embedded for p in progress]
    assert counts == sorted(counts)                                       # never goes back
