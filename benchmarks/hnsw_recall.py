"""Chroma's HNSW settings (`[chroma] hnsw_m`, `hnsw_ef`) against exact search: recall@64 and time per query.

    python -m benchmarks.hnsw_recall [--chunks 20000] [--queries 200] [--m 16,32] [--ef 64,128,256,512,1024,4096]
        [--eval-data ../shared/data/eval]

Vectors: the keyword_scale stand-in embedder (hashed bag of words, 384 dims, unit length) of ~1,500-char chunks
re-mixed from the SQuAD and Cranfield sentences; queries: SQuAD and Cranfield questions, embedded the same way.
For each `hnsw_m`, the chunks go into an embedded Chroma collection created by ragtui's own `VectorIndex` (cosine,
that M and the first ef); then for each `hnsw_ef` the collection's ef_search is set as an ingest sets it and the
client is opened again (Chroma reads the configuration when it loads the index), and every query asks
`VectorIndex.query` for the top 64. Yardstick, in the same run and process: exact search, numpy's matrix product
over all the vectors (the true top 64). Recall@64 is the share of the true top 64 that HNSW returned, averaged over
the queries; "with ties" also counts a returned chunk whose exact score equals the true 64th's. Prints a Markdown
table and one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.corpus_sentences import draw, sentences
from benchmarks.keyword_scale import DIM, DOC_CHARS, ROOT, TOP_K, hashed, questions
from ragtui.model.chunks import Chunk, ChunkMeta

CHUNK_CHARS = DOC_CHARS // 8


def chunk_texts(eval_dir: Path, n: int) -> list[str]:
    pool = sentences(eval_dir)
    rng = random.Random(11)
    return [" ".join(draw(rng, pool, CHUNK_CHARS)) + " " for _ in range(n)]


def build(path: Path, m: int, ef: int, chunks: list[Chunk], vectors: np.ndarray) -> dict[str, float]:
    from ragtui.config import load_settings
    from ragtui.stores.vector import VectorIndex, chroma_client, release_embedded

    settings = load_settings(user_file=path / "none.toml", env={}, overrides=[])
    client = chroma_client(settings.chroma, path)
    index = VectorIndex(client, f"bench-m{m}", "hash-384", hnsw_ef=ef, hnsw_m=m)
    wall, cpu = time.perf_counter(), time.process_time()
    step = 5_000
    for start in range(0, len(chunks), step):
        index.add(chunks[start:start + step], vectors[start:start + step].tolist())
    built = {"build_wall_s": round(time.perf_counter() - wall, 1), "build_cpu_s": round(time.process_time() - cpu, 1)}
    release_embedded(path)
    return built


def search(path: Path, m: int, ef: int, queries: np.ndarray) -> tuple[list[list[str]], list[float], list[float]]:
    """Every query's top 64 through a freshly opened client with ef_search = `ef`; wall and CPU ms per query."""
    from ragtui.config import load_settings
    from ragtui.stores.vector import VectorIndex, chroma_client, release_embedded

    settings = load_settings(user_file=path / "none.toml", env={}, overrides=[])
    index = VectorIndex(chroma_client(settings.chroma, path), f"bench-m{m}", "hash-384", hnsw_ef=ef, hnsw_m=m)
    index.collection.modify(configuration={"hnsw": {"ef_search": ef}})   # what an ingest does on a changed ef
    release_embedded(path)                                               # and a new process would load
    index = VectorIndex(chroma_client(settings.chroma, path), f"bench-m{m}", "hash-384", hnsw_ef=ef, hnsw_m=m)
    assert index.hnsw()["ef_search"] == ef and index.hnsw()["max_neighbors"] == m, index.hnsw()
    index.query(queries[0].tolist(), TOP_K)                                # the index load, not timed
    found, walls, cpus = [], [], []
    for q in queries:
        wall, cpu = time.perf_counter(), time.process_time()
        hits = index.query(q.tolist(), TOP_K)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        found.append([cid for cid, _ in hits])
    release_embedded(path)
    return found, walls, cpus


def pct(values: list[float], p: float) -> float:
    return round(float(np.percentile(values, p)), 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--m", default="16,32")
    parser.add_argument("--ef", default="64,128,256,512,1024,4096")
    parser.add_argument("--eval-data", type=Path, default=ROOT.parent / "shared" / "data" / "eval")
    args = parser.parse_args()
    ms = [int(x) for x in args.m.split(",")]
    efs = [int(x) for x in args.ef.split(",")]

    texts = chunk_texts(args.eval_data, args.chunks)
    vectors = np.array([hashed(t) for t in texts], dtype=np.float32)
    chunks = [Chunk(f"c{i}", t, ChunkMeta("bench", f"d{i // 8}.txt", "0" * 64, "txt", i % 8, 0, len(t)))
              for i, t in enumerate(texts)]
    queries = np.array([hashed(q) for q in questions(args.eval_data, args.queries)], dtype=np.float32)

    walls, cpus, truth, floors, exact = [], [], [], [], []
    for q in queries:                      # the yardstick: exact cosine top 64 (unit vectors: a dot product)
        wall, cpu = time.perf_counter(), time.process_time()
        scores = vectors @ q
        top = np.argpartition(-scores, TOP_K)[:TOP_K]
        truth.append({f"c{i}" for i in top})
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        floors.append(float(scores[top].min()) - 1e-6)
        exact.append(scores)
    rows: list[dict[str, Any]] = [{"search": "exact (numpy)", "m": None, "ef": None, "recall": 1.0,
                                   "recall_ties": 1.0, "p50_ms": pct(walls, 50), "p95_ms": pct(walls, 95),
                                   "cpu_p50_ms": pct(cpus, 50)}]
    builds = {}
    with tempfile.TemporaryDirectory(prefix="hnsw-recall-") as tmp:
        for m in ms:
            path = Path(tmp) / f"m{m}"
            builds[m] = build(path, m, efs[0], chunks, vectors)
            for ef in efs:
                found, walls, cpus = search(path, m, ef, queries)
                recall = float(np.mean([len(truth[i] & set(f)) / TOP_K for i, f in enumerate(found)]))
                # a returned chunk that ties with the true 64th counts as right (many stand-in vectors tie)
                ties = float(np.mean([sum(exact[i][int(c[1:])] >= floors[i] for c in f) / TOP_K
                                      for i, f in enumerate(found)]))
                rows.append({"search": "Chroma HNSW", "m": m, "ef": ef, "recall": round(recall, 4),
                             "recall_ties": round(ties, 4),
                             "p50_ms": pct(walls, 50), "p95_ms": pct(walls, 95), "cpu_p50_ms": pct(cpus, 50)})

    print(f"{args.chunks:,} chunks x {DIM} dims, {len(queries)} queries, top {TOP_K}; "
          f"CPUs: {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")
    for m, built in builds.items():
        print(f"build M={m}: {built['build_wall_s']} s wall, {built['build_cpu_s']} CPU-s")
    print("\n| search | M | ef | recall@64 | with ties | p50 ms | p95 ms | CPU p50 ms |\n"
          "|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['search']} | {r['m'] or '-'} | {r['ef'] or '-'} | {r['recall']:.3f} | {r['recall_ties']:.3f} | "
              f"{r['p50_ms']} | "
              f"{r['p95_ms']} | {r['cpu_p50_ms']} |")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps({"chunks": args.chunks, "queries": len(queries), "builds": builds, "rows": rows,
                      "peak_rss_mib": peak}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
