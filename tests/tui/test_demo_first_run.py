"""`ragtui demo` on a fresh data dir, started as `make demo` starts it, in a fresh interpreter: the warm-up
(probe -> warm-up -> the engine's heavy imports), the WordNet check and the first-run ingest all start at
once, and the first ingest must finish and a question must be answered (a fake Ollama over HTTP). This
first-import race failed the demo on a loaded machine (`ImportError: cannot import name ... from partially
initialized module 'llama_index.core.tools'`).

Stress mode repeats it under a CPU burner (one busy process per core), which is how the race shows:

    PYTHONPATH=$PWD python -m pytest -q tests/tui/test_demo_first_run.py --stress 20
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli_run import ROOT
from tests.fake_ollama import FakeOllama


@contextmanager
def cpu_burner(busy: bool) -> Iterator[None]:
    """One process spinning per core while the block runs (none when `busy` is false)."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)] \
        if busy else []
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def demo_command(tmp_path: Path, host: str) -> tuple[list[str], dict[str, str]]:
    """`ragtui demo` in a HOME of its own (so its own default data dir), through
    tests/demo_first_run_driver.py, which writes its report to tmp_path/report.json."""
    home = tmp_path / "home"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "XDG_DATA_HOME": str(home / ".local/share"),
           "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache")}
    env = {k: v for k, v in env.items() if not k.startswith("RAGTUI_")}
    return [sys.executable, "-m", "tests.demo_first_run_driver", str(tmp_path / "report.json"), "--ollama-host",
            host, "--set", "llm.model=chat"], env


def demo_first_run(tmp_path: Path, host: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    argv, env = demo_command(tmp_path, host)
    (tmp_path / "report.json").unlink(missing_ok=True)
    try:
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    except subprocess.TimeoutExpired as exc:     # hung past the driver's own guard: its stacks are on stderr
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        done = subprocess.CompletedProcess(argv, -9, "", stderr)
    out = tmp_path / "report.json"
    return done, json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}


def test_the_demo_first_run_ingests_and_answers(tmp_path: Path, fake_ollama: FakeOllama,
                                                 request: pytest.FixtureRequest) -> None:
    repeats = request.config.getoption("--stress")
    failures = []
    for run in range(max(repeats, 1)):
        with cpu_burner(repeats > 0):
            done, report = demo_first_run(tmp_path / f"run{run}", fake_ollama.url)
        if done.returncode != 0 or report.get("ingest") != "ready" or not report.get("answer") \
                or report.get("bypasses"):
            failures.append(f"run {run}: exit {done.returncode}, {report}\n{done.stderr[-3000:]}")
    assert not failures, f"{len(failures)} of {max(repeats, 1)} runs failed:\n" + "\n".join(failures)


def test_a_first_run_killed_while_embedding_is_resumed_by_the_next_start(tmp_path: Path,
                                                                          fake_ollama: FakeOllama) -> None:
    """The first run is killed (SIGKILL) once its ingest is embedding; the collection's manifest exists, and
    the next `ragtui demo` ingests again (resuming from the records), then answers."""
    fake_ollama.embed_gate = threading.Event()            # embedding waits: the ingest is caught mid-way
    argv, env = demo_command(tmp_path, fake_ollama.url)
    manifest = tmp_path / "home/.local/share/ragtui/demo/collections/demo/collection.json"
    first = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not (fake_ollama.calls("/api/embed") and manifest.is_file()) and first.poll() is None:
            time.sleep(0.05)
        assert first.poll() is None, "the first run ended before it was killed"
    finally:
        first.kill()
        first.wait()
    assert json.loads(manifest.read_text(encoding="utf-8"))["state"] == "ingesting"    # cut mid-ingest
    fake_ollama.embed_gate.set()
    done, report = demo_first_run(tmp_path, fake_ollama.url)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "first run: ingesting the sample corpus" in done.stdout
    assert report["ingest"] == "ready" and report["answer"] and not report["error"]
