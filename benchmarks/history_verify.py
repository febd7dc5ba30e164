"""What `ragtui history verify --all` costs over many saved sessions, measured the way a user runs it (the CLI).

    .venv/bin/python -m benchmarks.history_verify [--sessions 1000] [--asked 100] [--files 40] [--runs 3]

Builds everything through the real paths, against the tests' fake Ollama over HTTP (its replies take no model
time): a corpus of FILES Markdown files (12 sections each) ingested with `ragtui ingest`; ASKED research
sessions run by the engine (`Workspace.new_session(...).run()`: retrieval, annotation of every source, a cited
answer, each saved to the history), one question each, and the history filled up to SESSIONS with copies of
them, each read back and saved as a new session by the history store (a real session takes one to two seconds
on the shared 2-core box: a thousand would take half an hour; the check reads a copy exactly as it reads the
session it copies, and the per-file cache of one verify run is shared by them as by sessions citing the same
files); then a tenth of the files changed (a new first section
in some: their chunks move; a rewritten sentence in others), one removed, and the folder ingested again with
`ragtui ingest --sync` (which re-checks the sessions citing them). Then times, as child processes, each the
median of RUNS:

- `ragtui history verify --all --json`: every session re-checked and stored;
- yardstick: `ragtui history list -n SESSIONS`, the same start-up and a read of every session's summary.

Wall and CPU seconds (the child's user + system), and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ragtui.config import Settings, load_settings
from tests.fake_ollama import FakeOllama

ROOT = Path(__file__).resolve().parents[1]
TOPICS = ("pumps", "valves", "seals", "boilers", "turbines", "bearings", "filters", "motors", "fans", "gauges",
          "pipes", "tanks")


def section(file: int, topic: str) -> str:
    return (f"# {topic.title()} of unit {file}\n\n"
            f"The {topic} of unit {file} are inspected every {file + 3} weeks by the day shift. "
            f"A worn part of the {topic} in unit {file} is replaced within {file % 7 + 2} days. "
            f"Records of the {topic} checks for unit {file} are kept in the plant log.\n\n")


def write_corpus(folder: Path, files: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        (folder / f"unit{f:03d}.md").write_text("".join(section(f, t) for t in TOPICS))


def change_corpus(folder: Path, files: int) -> None:
    """A tenth of the files changed (half get a new first section, half a rewritten sentence), one removed."""
    for f in range(0, files, 10):
        path = folder / f"unit{f:03d}.md"
        text = path.read_text()
        if f % 20 == 0:
            path.write_text(f"# Scope\n\nThis manual covers unit {f} of the plant room.\n\n{text}")
        else:
            path.write_text(text.replace(f"are inspected every {f + 3} weeks", "are inspected monthly"))
    (folder / f"unit{files - 1:03d}.md").unlink()


def cli(settings: Settings, *args: str) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """`ragtui ARGS` in a fresh process: its result, wall seconds, CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ragtui", "--config", os.devnull, "--data-dir",
                           str(settings.data_dir), "--ollama-host", settings.ollama.host, "--set",
                           "synonyms.enabled=false", "--set", "llm.model=chat", *args],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 3):
        raise SystemExit(f"ragtui {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done, wall, cpu


async def ask_all(settings: Settings, asked: int, sessions: int, files: int) -> None:
    """`asked` sessions run by the engine, then copies of them saved until the history holds `sessions`."""
    from ragtui.workspace import Workspace

    async with Workspace(settings) as workspace:
        ids = []
        for n in range(asked):
            topic, unit = TOPICS[n % len(TOPICS)], (n * 7) % files
            session = workspace.new_session(f"How often are the {topic} of unit {unit} inspected?", ["plant"])
            async for _ in session.run():
                pass
            await session.aclose()
            ids.append(session.id)
        history = workspace.history
        for n in range(sessions - asked):
            history.save(replace(history.load(ids[n % len(ids)]), id=None, created_at=""))


def median_run(settings: Settings, runs: int, *args: str) -> tuple[float, float, str]:
    results = [cli(settings, *args) for _ in range(runs)]
    return (statistics.median(r[1] for r in results), statistics.median(r[2] for r in results),
            results[-1][0].stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--asked", type=int, default=100)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    fake = FakeOllama().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = load_settings(user_file=Path(tmp) / "none.toml", env={}, overrides=[
                f"storage.data_dir={tmp}/data", f"ollama.host={fake.url}", "llm.model=chat",
                "synonyms.enabled=false"])
            docs = Path(tmp) / "docs"
            write_corpus(docs, args.files)
            _, wall, _ = cli(settings, "ingest", str(docs), "-c", "plant")
            print(f"ingest: {args.files} files in {wall:.1f} s")
            start = time.perf_counter()
            asyncio.run(ask_all(settings, min(args.asked, args.sessions), args.sessions, args.files))
            print(f"sessions: {min(args.asked, args.sessions)} asked, {args.sessions} saved in "
                  f"{time.perf_counter() - start:.1f} s")
            change_corpus(docs, args.files)
            done, wall, cpu = cli(settings, "ingest", str(docs), "-c", "plant", "--sync")
            recheck = next(line for line in done.stdout.splitlines() if line.startswith("history:"))
            print(f"re-ingest of the changed folder: {wall:.1f} s wall, {cpu:.1f} s CPU; {recheck}")

            v_wall, v_cpu, out = median_run(settings, args.runs, "history", "verify", "--all", "--json")
            data = json.loads(out)
            states: dict[str, int] = {}
            for entry in data["sessions"]:
                for check in entry["checks"]:
                    states[check["state"]] = states.get(check["state"], 0) + 1
            l_wall, l_cpu, _ = median_run(settings, args.runs, "history", "list", "-n", str(args.sessions))
            print(f"history verify --all: {data['checked']} sessions, {sum(states.values())} citations "
                  f"({', '.join(f'{n} {s}' for s, n in sorted(states.items()))})")
            print(f"  {v_wall:.2f} s wall, {v_cpu:.2f} s CPU (median of {args.runs})")
            print(f"yardstick history list -n {args.sessions}: {l_wall:.2f} s wall, {l_cpu:.2f} s CPU")
            print(f"ratio verify / list: {v_wall / l_wall:.1f}x wall, {v_cpu / l_cpu:.1f}x CPU")
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
