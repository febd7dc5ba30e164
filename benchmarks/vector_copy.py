"""The 8-bit vector copy (ragtui/stores/vector_copy.py) of an existing collection: how long the next write takes to
make it from Chroma (what a collection written before the copy pays once), its size on disk, the cost of one
search of it in a fresh process, and how much of the exact top 64 (float32 cosine over every vector) it finds.

    python -m benchmarks.vector_copy --data-dir DIR --collection NAME [--queries 30] [--make]

`--make` first makes the copy through the writer's own path (VectorIndex's rebuild after a write, under the
collection's exclusive vector lock). The searches run in a child process, so the copy's pages are mapped
the way a cold query process maps them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.ingest_scale import yardstick


def make(data_dir: Path, name: str) -> dict[str, float]:
    from ragtui.config import load_settings
    from ragtui.library import CollectionRegistry
    from ragtui.stores.vector import VectorIndex

    settings = load_settings(user_file=data_dir / "none.toml", env={}, overrides=[f"storage.data_dir={data_dir}"])
    collection = CollectionRegistry(settings).open(name)
    model = collection.models[0]
    wall, cpu = time.perf_counter(), time.process_time()
    with collection.vector_access(write=True):
        index = collection.vectors(model)
        assert isinstance(index, VectorIndex) and index._copy is not None
        index.count()
        loaded = time.perf_counter() - wall
        index._copy.begin()
        index._end_copy(False)
    out = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu, "chroma_load_wall_s": loaded}
    collection.close()
    return out


def search(data_dir: Path, name: str, queries: int) -> dict[str, object]:
    """In this (fresh) process: the copy's first search and the next ones, and recall@64 against exact search."""
    import numpy as np

    from ragtui.config import load_settings
    from ragtui.library import CollectionRegistry
    from ragtui.stores.vector import copy_root
    from ragtui.stores.vector_copy import VectorCopy

    settings = load_settings(user_file=data_dir / "none.toml", env={}, overrides=[f"storage.data_dir={data_dir}"])
    collection = CollectionRegistry(settings).open(name)
    folder = copy_root(collection.path / "chroma") / collection.chroma_name(collection.models[0])
    rng = np.random.default_rng(11)
    t, c = time.perf_counter(), time.process_time()
    view = VectorCopy(folder).view()
    assert view is not None, f"no clean copy in {folder}: run with --make"
    opened = (time.perf_counter() - t, time.process_time() - c)
    # queries: stored vectors with noise, so each has near neighbours as a real question has
    picks = rng.choice(view.rows, size=queries, replace=False)
    wide = np.asarray(view._rows[np.sort(picks)], dtype=np.float32)
    probes = wide / np.linalg.norm(wide, axis=1, keepdims=True) + rng.normal(scale=0.02, size=wide.shape)
    times = []
    found = []
    for n, probe in enumerate(probes):
        t, c = time.perf_counter(), time.process_time()
        hits = view.search(probe, 64)
        times.append((time.perf_counter() - t, time.process_time() - c))
        found.append(hits)
        if n == 0:
            first_rss = _rss_mb()
    exact, hnsw = _exact_and_hnsw(collection, probes, [{cid for cid, _ in f} for f in found])
    collection.close()
    out: dict[str, object] = {
        "open_wall_s": opened[0], "first_search_wall_s": times[0][0], "first_search_cpu_s": times[0][1],
        "later_search_wall_s_median": sorted(t for t, _ in times[1:])[len(times[1:]) // 2],
        "later_search_cpu_s_median": sorted(c for _, c in times[1:])[len(times[1:]) // 2],
        "rss_after_first_search_mb": first_rss, "rows": view.rows,
        "copy_score_error_max": max(abs(score - e["scores"][cid]) for f, e in zip(found, exact, strict=True)
                                    for cid, score in f)}
    for name, runs in (("copy", [[cid for cid, _ in f] for f in found]), ("hnsw", hnsw)):
        plain = [len(set(r) & set(e["top"])) / 64 for r, e in zip(runs, exact, strict=True)]
        ties = [sum(e["scores"].get(cid, -2.0) >= e["kth"] - 1e-6 for cid in r) / 64
                for r, e in zip(runs, exact, strict=True)]
        out[f"{name}_recall_at_64"] = sum(plain) / len(plain)
        out[f"{name}_recall_at_64_with_ties"] = sum(ties) / len(ties)
        out[f"{name}_recall_at_64_with_ties_min"] = min(ties)
    return out


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _exact_and_hnsw(collection: object, probes: object,
                    found: list[set[str]]) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """Per probe, the exact top 64 by float32 cosine over every vector Chroma holds (read from it page by page),
    the 64th's score and the exact score of every id the copy found; and Chroma's own HNSW top 64 of it."""
    import numpy as np

    from ragtui.stores.vector import VectorIndex

    with collection.vector_access():                       # type: ignore[attr-defined]
        index = collection.vectors(collection.models[0])   # type: ignore[attr-defined]
        assert isinstance(index, VectorIndex)
        ids = sorted(index.ids())
        queries = np.asarray(probes, dtype=np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        best: list[list[tuple[float, str]]] = [[] for _ in range(len(queries))]
        scores_of: list[dict[str, float]] = [{} for _ in range(len(queries))]
        for page_ids, vectors in index._pages(ids, 5000):
            unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            scores = queries @ unit.T
            for q, row in enumerate(scores):
                top = np.argpartition(row, -64)[-64:]
                best[q] = sorted(best[q] + [(float(row[i]), page_ids[i]) for i in top], reverse=True)[:64]
                scores_of[q].update((cid, float(row[i])) for i, cid in enumerate(page_ids) if cid in found[q])
        hnsw = [[cid for cid, _ in index.query(list(map(float, q)), 64)] for q in queries]
        hnsw_ids = [set(h) for h in hnsw]
        for page_ids, vectors in index._pages(sorted(set().union(*hnsw_ids)), 5000):
            unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            scores = queries @ unit.T
            for q, row in enumerate(scores):
                scores_of[q].update((cid, float(row[i])) for i, cid in enumerate(page_ids) if cid in hnsw_ids[q])
    exact = [{"top": [cid for _, cid in b], "kth": b[-1][0], "scores": {**s, **{cid: v for v, cid in b}}}
             for b, s in zip(best, scores_of, strict=True)]
    return exact, hnsw


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--collection", required=True)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--make", action="store_true")
    parser.add_argument("--search-only", action="store_true", help=argparse.SUPPRESS)   # the child's part
    args = parser.parse_args()
    if args.search_only:
        print(json.dumps(search(args.data_dir, args.collection, args.queries)))
        return
    out: dict[str, object] = {"yardstick_before": yardstick()}
    if args.make:
        out["make"] = make(args.data_dir, args.collection)
    from ragtui.config import load_settings
    from ragtui.library import CollectionRegistry
    from ragtui.stores.vector import copy_root

    settings = load_settings(user_file=args.data_dir / "none.toml", env={},
                             overrides=[f"storage.data_dir={args.data_dir}"])
    collection = CollectionRegistry(settings).open(args.collection)
    folder = copy_root(collection.path / "chroma")
    out["copy_bytes"] = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    child = subprocess.run([sys.executable, "-m", "benchmarks.vector_copy", "--data-dir", str(args.data_dir),
                            "--collection", args.collection, "--queries", str(args.queries), "--search-only"],
                           capture_output=True, text=True, check=True, env={**os.environ})
    out["search"] = json.loads(child.stdout)
    out["yardstick_after"] = yardstick()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
