"""The first imports of the heavy libraries from several threads at once: a served TUI's collections pane once
showed `ImportError ... partially initialized module 'numpy._typing'` (numpy and llama_index have circular
imports, and two threads importing them together can each see the other's half-built module). Each run is a
fresh interpreter, where nothing is imported yet; on the old code every run failed this way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_run import ROOT, cli
from tests.fake_ollama import FakeOllama
from tests.tui.test_session import write_corpus


@pytest.fixture
def data_dir(tmp_path: Path, fake_ollama: FakeOllama) -> Path:
    for name in ("docs", "more"):
        (tmp_path / name).mkdir()
        done = cli(tmp_path, fake_ollama.url, "ingest", str(write_corpus(tmp_path / name)), "-c", name)
        assert done.returncode == 0, done.stderr
    return tmp_path / "data"


def test_heavy_imports_from_many_threads_at_once_load_in_one_order(data_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home")}
    for _ in range(3):
        done = subprocess.run([sys.executable, "-m", "tests.heavy_import_driver", str(data_dir)], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout.splitlines()[-1])
        assert report == {"errors": [], "loaded": ["numpy", "whoosh", "chromadb", "llama_index.core", "wn"],
                          "bypasses": []}


def test_a_query_starts_loading_the_vectors_before_the_engine_is_imported(data_dir: Path, tmp_path: Path) -> None:
    """`prepare_soon` opens the stores in a thread with chromadb alone: Chroma's index load (seconds at a million
    chunks) then runs while the command imports llama_index, instead of after it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "tests.prepare_driver", str(data_dir), "docs"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    [docs] = [c for c in json.loads(cli(tmp_path, "http://127.0.0.1:9", "collections", "list", "--json").stdout)
              if c["name"] == "docs"]
    assert report == {"llama_index_imported": False, "loaded": {"nomic-embed-text": docs["chunks"]},
                      "bypasses": [], "threads_left_by_close": []}
