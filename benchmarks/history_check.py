"""What the damaged-history check costs: opening a HistoryStore runs SQLite's read-only `quick_check`.

    .venv/bin/python -m benchmarks.history_check [--sessions 2000]

Builds a history of N sessions (one turn, 20 sources of 1,500 characters each: about the size
of a real ask), then times HistoryStore() on it (the check plus the schema statements) against
a plain sqlite3 connect + `SELECT count(*)` as yardstick, each the median of 7 opens, warm cache.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ragtui.history import HistoryStore
from ragtui.model.chunks import Chunk, ChunkMeta
from ragtui.model.conversation import Conversation, SessionSource, Turn


def build(data: Path, sessions: int) -> Path:
    store = HistoryStore(data)
    for n in range(sessions):
        sources = [SessionSource(number=i + 1, score=0.5, rel_score=0.5, legs=("vector",),
                                 chunk=Chunk(id=f"c{n}-{i}", text=f"text {n} {i} " * 150,
                                             meta=ChunkMeta("docs", f"f{i}.md", "0" * 64, "md", i, 0, 1500)))
                   for i in range(20)]
        store.save(Conversation(["docs"], {}, "chat", "chat", turns=[Turn(f"question {n}", sources=sources)]))
    return store.path


def timed(fn: Callable[[], object], runs: int = 7) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = build(Path(tmp), args.sessions)

        def plain() -> None:
            conn = sqlite3.connect(path)
            conn.execute("SELECT count(*) FROM sessions").fetchone()
            conn.close()

        store_wall, store_cpu = timed(lambda: HistoryStore(tmp))
        plain_wall, plain_cpu = timed(plain)
        print(f"history: {args.sessions} sessions, {path.stat().st_size / 2**20:.1f} MiB")
        print(f"HistoryStore() with quick_check: {store_wall * 1000:.1f} ms wall, {store_cpu * 1000:.1f} ms CPU")
        print(f"yardstick (connect + count): {plain_wall * 1000:.1f} ms wall, {plain_cpu * 1000:.1f} ms CPU")
        print(f"ratio: {store_wall / plain_wall:.1f}x")


if __name__ == "__main__":
    main()
