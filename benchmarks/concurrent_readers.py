"""Concurrent readers: many `ragtui query` processes against a collection another process is ingesting into.

    python -m benchmarks.concurrent_readers [--queries 200] [--parallel 16] [--files 400]

One seed ingest, then an ingest of `files` more files in a subprocess while
`queries` query processes (at most `parallel` at once) search the same collection,
and one long-lived Workspace in this process searches it every half second. Each
query must exit 0 with JSON; once the ingest has finished, a fresh query and the
long-lived Workspace must both find the last file's chunk through the vector leg
and count every chunk. Prints one JSON object; the suite runs it small
(tests/test_concurrency.py, which starts the processes through its warm interpreter), docs/benchmarks.md quotes
a large run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ragtui.config import load_settings
from ragtui.workspace import Workspace

VOCAB = ("pump valve pressure flow water tank pipe seal motor shaft bearing gear torque energy heat cycle system "
         "design load stress steel joint weld bolt frame beam column force moment fluid turbine blade")
COLLECTION = "stress"

# Runs `python -m ragtui ...` (argv) to its end within a timeout: its exit status and output as text.
Runner = Callable[[list[str], float], subprocess.CompletedProcess[str]]


def _marker(i: int) -> str:
    """A word found in exactly one file."""
    return "zq" + "".join(chr(ord("a") + int(d)) for d in f"{i:05d}")


def _write_files(folder: Path, start: int, count: int) -> None:
    rng = random.Random(start)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + count):
        words = " ".join(rng.choice(VOCAB.split()) for _ in range(60))
        (folder / f"doc{i:05d}.txt").write_text(f"{_marker(i)} {words}.\n")


def _cli(data_dir: Path, url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "ragtui", "--data-dir", str(data_dir), "--ollama-host", url,
            "--set", "synonyms.enabled=false", "--set", "embed.model=nomic-embed-text", "--set", "llm.model=chat",
            "--set", "embed.batch_size=8", *args]


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


def run_process(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """The runner of a benchmark run: each process a fresh interpreter."""
    return subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=timeout, check=False)


def _query(data_dir: Path, url: str, text: str, runner: Runner) -> dict[str, Any]:
    started = time.monotonic()
    proc = runner(_cli(data_dir, url, "query", "-c", COLLECTION, "--json", text), 300)
    out: dict[str, Any] = {"rc": proc.returncode, "started": started, "ended": time.monotonic()}
    if proc.returncode != 0:
        out["stderr"] = proc.stderr[-400:]
        return out
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        out["rc"] = "bad json"
        return out
    vector = data["retrieval_meta"]["collections"][COLLECTION].get("vector") or {}
    out["vectors"] = sum((vector.get("vectors") or {}).values())
    out["chunks"] = vector.get("chunks", 0)
    out["sources"] = [n["source"] for n in data["nodes"] if "vector" in n["legs"]]
    return out


def _watch(data_dir: Path, url: str, text: str, stop: threading.Event, seen: list[tuple[float, int, list[str]]],
           errors: list[str]) -> None:
    """The TUI's path: one Workspace kept open, searching again and again."""
    settings = load_settings(env={}, user_file=data_dir / "none.toml",
                             overrides=[f"storage.data_dir={data_dir}", f"ollama.host={url}",
                                        "synonyms.enabled=false", "embed.model=nomic-embed-text"])
    with Workspace(settings) as workspace:
        while not stop.is_set():
            try:
                started = time.monotonic()
                result = asyncio.run(workspace.retrieve(text, [COLLECTION]))
                meta = result.meta.collections[COLLECTION].vector
                seen.append((started, sum(meta.vectors.values()) if meta else 0,
                             [h.chunk.meta.source for h in result.hits if "vector" in h.legs]))
            except Exception as exc:  # recorded: a crash of the long-lived reader is a failure of the run
                errors.append(f"{type(exc).__name__}: {exc}")
            time.sleep(0.5)


def run(workdir: Path, url: str, *, queries: int, parallel: int, files: int, seed_files: int = 20,
        runner: Runner = run_process) -> dict[str, Any]:
    """The stress run; returns the figures (see the module docstring). `runner` starts each ragtui process;
    children_cpu_s counts only the processes this one waited for itself (those of `run_process`)."""
    data_dir = workdir / "data"
    _write_files(workdir / "docs", 0, seed_files)
    seeded = runner(_cli(data_dir, url, "ingest", str(workdir / "docs"), "-c", COLLECTION), 600)
    if seeded.returncode != 0:
        raise subprocess.CalledProcessError(seeded.returncode, seeded.args, seeded.stdout, seeded.stderr)
    _write_files(workdir / "docs", seed_files, files)
    last = seed_files + files - 1

    stop = threading.Event()
    seen: list[tuple[float, int, list[str]]] = []
    watch_errors: list[str] = []
    text = _marker(last)    # the last file alone holds it: found by both legs once its batch is in
    watcher = threading.Thread(target=_watch, args=(data_dir, url, text, stop, seen, watch_errors), daemon=True)
    watcher.start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    with ThreadPoolExecutor(1) as ingesting, ThreadPoolExecutor(parallel) as pool:
        ingest_run = ingesting.submit(runner, _cli(data_dir, url, "ingest", str(workdir / "docs"), "-c", COLLECTION),
                                      3600)
        results = list(pool.map(lambda _: _query(data_dir, url, text, runner), range(queries)))
        ingest = ingest_run.result()
    ingest_end = time.monotonic()
    final = _query(data_dir, url, text, runner)
    while not any(started > ingest_end for started, _, _ in seen) and not watch_errors and watcher.is_alive():
        time.sleep(0.2)   # one round of the watcher that started after the ingest ended
    stop.set()
    watcher.join(timeout=60)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    after_ingest = [r for r in results if r["rc"] == 0 and r["started"] > ingest_end]
    total = final.get("chunks", -1)
    last_file = f"doc{last:05d}.txt"
    watched = [(n, last_file in found) for started, n, found in seen if started > ingest_end]
    return {
        "queries": queries, "parallel": parallel, "files": files,
        "ingest_rc": ingest.returncode, "ingest_stderr": ingest.stderr[-400:],
        "ingest_s": round(ingest_end - t0, 1),
        "query_exit_codes": {str(k): sum(1 for r in results if r["rc"] == k) for k in {r["rc"] for r in results}},
        "failures": [r.get("stderr", "") for r in results if r["rc"] != 0][:5],
        "queries_during_ingest": sum(1 for r in results if r["started"] <= ingest_end),
        "final_query": {"rc": final["rc"], "vectors": final.get("vectors"), "chunks": total,
                        "found_last_file": last_file in final.get("sources", [])},
        "stale_after_ingest": sum(1 for r in after_ingest if r.get("vectors") != total),
        "watcher_errors": watch_errors[:5],
        "watcher_rounds": len(seen),
        "watcher_after_ingest": {"vectors": watched[0][0], "found_last_file": watched[0][1]} if watched else None,
        "wall_s": round(time.monotonic() - t0, 1),
        "children_cpu_s": round(usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--parallel", type=int, default=16)
    parser.add_argument("--files", type=int, default=400)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fake_ollama import FakeOllama

    fake = FakeOllama().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(run(Path(tmp), fake.url, queries=args.queries, parallel=args.parallel,
                                 files=args.files), indent=2))
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
