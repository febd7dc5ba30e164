"""Interrupted ingests: a real subprocess killed with SIGKILL, and a cancelled task; the next run repairs."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ragtui.collections import CollectionRegistry
from ragtui.config import Settings
from ragtui.events import IngestProgress
from tests.fake_ollama import FakeOllama
from tests.ingest.conftest import SMALL, ingest

WORDS = ("valve", "flapper", "tank", "float", "trap", "siphon", "bowl", "seal", "chain", "lever", "wax", "bolt")


def make_folder(root: Path, files: int = 12) -> Path:
    root.mkdir()
    for i in range(files):
        body = " ".join(f"The {WORDS[(i + k) % len(WORDS)]} number {k} of file {i} holds." for k in range(25))
        (root / f"f{i:03d}.txt").write_text(body)
    return root


def assert_consistent(settings: Settings, name: str) -> set[str]:
    coll = CollectionRegistry(settings).open(name)
    try:
        keyword, vector = coll.keyword.ids(), coll.vectors("nomic-embed-text").ids()
        assert keyword == vector
        assert coll.keyword.doc_count() == len(keyword) == coll.vectors("nomic-embed-text").count()
        return keyword
    finally:
        coll.close()


def test_kill_9_mid_ingest_then_rerun_repairs(make_settings: Callable[..., Settings], fake_ollama: FakeOllama,
                                             tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "docs")
    settings = make_settings(*SMALL, "embed.batch_size=4")
    fake_ollama.embed_delay = 0.15
    cmd = [sys.executable, "-m", "ragtui", "--config", str(tmp_path / "none.toml"),
           "--data-dir", str(settings.data_dir), "--ollama-host", fake_ollama.url,
           "--set", "chunk.size_tokens=64", "--set", "embed.batch_size=4", "ingest", str(folder), "-c", "c"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + 60
    for line in proc.stdout:
        seen.append(line)
        if (line.startswith("progress:") and " 0 embedded" not in line) or time.monotonic() > deadline:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "".join(seen)
    assert any(line.startswith("progress:") for line in seen), "".join(seen)

    coll = CollectionRegistry(settings).open("c")
    assert coll.state == "interrupted"
    partial = coll.vectors("nomic-embed-text").count()
    total_chunks = len(coll.records.chunk_ids())
    coll.close()
    assert 0 < partial < total_chunks                   # killed while embedding: some vectors, not all

    fake_ollama.embed_delay = 0.0
    report = ingest(settings, [folder])
    assert not report.interrupted and not report.needs_embedding
    ids = assert_consistent(settings, "c")
    ingest(settings, [folder], name="clean")            # an uninterrupted run gives the same ids
    clean = assert_consistent(settings, "clean")
    assert ids == clean and len(ids) == total_chunks
    assert CollectionRegistry(settings).open("c").state == "ready"


def test_cancelled_task_leaves_stores_consistent(make_settings: Callable[..., Settings], fake_ollama: FakeOllama,
                                                 tmp_path: Path) -> None:
    from ragtui.ingest.pipeline import ingest_paths

    folder = make_folder(tmp_path / "docs", files=8)
    settings = make_settings(*SMALL, "embed.batch_size=4")
    fake_ollama.embed_delay = 0.1

    async def run_until_embedding() -> None:
        async def consume() -> None:
            async for event in ingest_paths(settings, "c", [folder]):
                if isinstance(event, IngestProgress) and event.embedded:
                    started.set()

        started = asyncio.Event()
        task = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), 30)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(run_until_embedding())
    assert CollectionRegistry(settings).open("c").state == "interrupted"
    fake_ollama.embed_delay = 0.0
    report = ingest(settings, [folder])
    assert report.unchanged == 8 and not report.needs_embedding
    ids = assert_consistent(settings, "c")
    assert 0 < report.chunks_embedded < len(ids)          # resumed: only the missing vectors were embedded
