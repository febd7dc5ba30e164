"""Interrupted ingests: a real subprocess killed with SIGKILL, and a cancelled task; the next run repairs."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ragtui.config import Settings
from ragtui.events import IngestProgress
from ragtui.ingest.pipeline import EMBED_PAGES
from ragtui.library import CollectionRegistry
from tests.collection_builder import index_chunks
from tests.fake_ollama import FakeOllama
from tests.ingest.conftest import SMALL, ingest
from tests.signals import default_sigint

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


PAGE = 2 * EMBED_PAGES          # chunks per page at batch size 2


def past_two_pages(line: str) -> bool:
    found = re.search(r" (\d+) embedded", line)
    return line.startswith("progress:") and found is not None and int(found.group(1)) > 2 * PAGE


def start_slow_ingest(settings: Settings, fake: FakeOllama, folder: Path, tmp_path: Path) -> subprocess.Popen[str]:
    """`ragtui ingest` in a subprocess, returned once the first vectors are stored.

    Pages of 16 chunks (batch size 2), so several are still to embed then: a page's vectors are stored while
    the next one is embedded, and the embedded count moves with each call, so once it passes two pages the
    first page's write has ended (it is awaited before the third page is embedded)."""
    fake.embed_delay = 0.15
    cmd = [sys.executable, "-m", "ragtui", "--config", os.devnull,
           "--data-dir", str(settings.data_dir), "--ollama-host", fake.url,
           "--set", "chunk.size_tokens=64", "--set", "embed.batch_size=2", "ingest", str(folder), "-c", "c"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + 300      # a guard against a hang; a loaded machine takes a minute to start one
    for line in proc.stdout:
        seen.append(line)
        if past_two_pages(line) or time.monotonic() > deadline:
            break
    assert any(past_two_pages(line) for line in seen), "".join(seen)
    return proc


def test_kill_9_mid_ingest_then_rerun_repairs(make_settings: Callable[..., Settings], fake_ollama: FakeOllama,
                                             tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "docs")
    settings = make_settings(*SMALL, "embed.batch_size=2")
    proc = start_slow_ingest(settings, fake_ollama, folder, tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

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


def test_ctrl_c_stops_the_cli_cleanly(make_settings: Callable[..., Settings], fake_ollama: FakeOllama,
                                      tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "docs", files=16)       # pages still to embed after the first is stored
    settings = make_settings(*SMALL, "embed.batch_size=2")
    proc = start_slow_ingest(settings, fake_ollama, folder, tmp_path)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "ingest interrupted" in err
    assert CollectionRegistry(settings).open("c").state == "interrupted"
    fake_ollama.embed_delay = 0.0
    assert not ingest(settings, [folder]).needs_embedding
    assert_consistent(settings, "c")


def test_cancelled_task_leaves_stores_consistent(make_settings: Callable[..., Settings], fake_ollama: FakeOllama,
                                                 tmp_path: Path) -> None:
    from ragtui.workspace import Workspace

    folder = make_folder(tmp_path / "docs", files=8)
    settings = make_settings(*SMALL, "embed.batch_size=2")   # 4 pages: one embedding while the last is written
    fake_ollama.embed_delay = 0.1

    async def run_until_embedding() -> None:
        async def consume() -> None:
            async with Workspace(settings) as workspace:
                async for event in workspace.ingest([folder], "c"):
                    if isinstance(event, IngestProgress) and event.embedded > 2 * PAGE:  # page 1 stored
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


def test_reconcile_repairs_every_crash_state(make_settings: Callable[..., Settings], fake_ollama: FakeOllama,
                                             tmp_path: Path) -> None:
    """States a kill can leave between the write steps, built by hand, then one re-run repairs them all."""
    from ragtui.model.chunks import Chunk, ChunkMeta, chunk_id

    folder = make_folder(tmp_path / "docs", files=4)
    settings = make_settings(*SMALL)
    ingest(settings, [folder])
    good = assert_consistent(settings, "c")
    coll = CollectionRegistry(settings).open("c")
    stray = Chunk(chunk_id("gone.txt", 0), "stray text of a file no record knows",
                  ChunkMeta("c", "gone.txt", "h", "txt", 0, 0, 10))
    index_chunks(coll.keyword, [stray])                                   # killed after indexing, before the journal
    coll.vectors("nomic-embed-text").add([stray], [[1.0] + [0.0] * 63])
    lost = sorted(good)[:3]
    coll.vectors("nomic-embed-text").delete_ids(lost)              # journal says embedded, Chroma lost them
    missing_kw = sorted(good)[-2:]
    coll.keyword.delete_ids(missing_kw)                            # keyword entries of a done file missing
    f000_record = dataclasses.replace(coll.records.file("f000.txt"), status="indexing")
    coll.records.begin([(f000_record, coll.records.chunks_of(["f000.txt"]))])   # journaled, not yet indexed
    assert coll.records.file("f000.txt").status == "indexing"
    coll.update_manifest(state="ingesting")
    coll.close()
    assert CollectionRegistry(settings).open("c").state == "interrupted"

    calls = len(fake_ollama.calls("/api/embed"))
    report = ingest(settings, [folder])
    assert report.reconciled > 0 and report.unchanged == 4
    assert assert_consistent(settings, "c") == good
    embedded_again = sum(len(r.body["input"]) for r in fake_ollama.calls("/api/embed")[calls:])
    f000 = {i for i in good if i.startswith(chunk_id("f000.txt", 0)[:16])}
    assert embedded_again == len(set(lost) | f000)                 # only what was actually missing
