"""Readers in other processes while an ingest writes: no crash, nothing stale (the multi-process rule).

The stress test is the small size of benchmarks/concurrent_readers.py: query
subprocesses and one long-lived Workspace against a collection another process
is ingesting into.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.concurrent_readers import run
from ragtui.config import Settings
from ragtui.workspace import Workspace
from tests.cli_run import ROOT, run_ragtui
from tests.fake_ollama import FakeOllama


def _cli_ingest(settings: Settings, folder: Path, name: str) -> None:
    done = run_ragtui([sys.executable, "-m", "ragtui", "--data-dir", str(settings.data_dir), "--ollama-host",
                       settings.ollama.host, "--set", "synonyms.enabled=false", "--set",
                       "embed.model=nomic-embed-text", "ingest", str(folder), "-c", name],
                      {**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr


def test_a_long_lived_workspace_finds_what_another_process_ingested(tmp_path: Path, make_settings) -> None:
    settings = make_settings("retrieve.min_similarity=0")   # the first query's only chunk is unrelated to it
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("pump valve seal\n")
    _cli_ingest(settings, docs, "c")
    with Workspace(settings) as workspace:
        first = asyncio.run(workspace.retrieve("zebrafresh giraffe", ["c"], mode="vector"))
        assert [h.chunk.meta.source for h in first.hits] == ["a.txt"]
        (docs / "b.txt").write_text("zebrafresh giraffe\n")
        _cli_ingest(settings, docs, "c")
        second = asyncio.run(workspace.retrieve("zebrafresh giraffe", ["c"], mode="vector"))
        assert second.hits[0].chunk.meta.source == "b.txt"     # the old HNSW index answered a.txt
        assert second.meta.collections["c"].vector.vectors == {"nomic-embed-text": 2}
        assert [i.chunks for i in workspace.list_collections()] == [2]


def test_query_processes_during_an_ingest_never_crash_and_see_the_new_chunks(tmp_path: Path,
                                                                              fake_ollama: FakeOllama) -> None:
    def warm(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        return run_ragtui(argv, {**os.environ, "PYTHONPATH": str(ROOT)}, timeout)

    figures = run(tmp_path, fake_ollama.url, queries=16, parallel=4, files=30, runner=warm)
    assert figures["ingest_rc"] == 0, figures["ingest_stderr"]
    assert figures["query_exit_codes"] == {"0": 16}, figures["failures"]
    assert figures["queries_during_ingest"] > 0
    assert figures["final_query"] == {"rc": 0, "vectors": 50, "chunks": 50, "found_last_file": True}
    assert figures["stale_after_ingest"] == 0
    assert figures["watcher_errors"] == []
    assert figures["watcher_after_ingest"] == {"vectors": 50, "found_last_file": True}
