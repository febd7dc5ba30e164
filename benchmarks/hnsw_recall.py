"""Chroma's HNSW settings (`[chroma] hnsw_m`, `hnsw_ef`, construction ef) against exact search: recall@64, time per
query, index size and load time.

    python -m benchmarks.hnsw_recall [--chunks 20000] [--queries 200] [--m 16,32] [--ef 64,128,256,512,1024,4096]
        [--construction-ef 100] [--vectors DIR] [--eval-data ../shared/data/eval]

Vectors: with `--vectors`, the real all-MiniLM-L6-v2 vectors that `benchmarks.minilm_vectors` cached in DIR (the
first `--chunks` of them, and its questions); without, the keyword_scale stand-in embedder (hashed bag of words,
384 dims, unit length). Either way of the same ~1,500-char chunks re-mixed from the SQuAD and Cranfield sentences
and the same SQuAD and Cranfield questions. For each `hnsw_m` and construction ef (Chroma's ef_construction,
default 100; ragtui leaves it at that), the chunks go into an embedded Chroma collection created by ragtui's own
`VectorIndex` (cosine, that M and the first ef); then for each `hnsw_ef` the collection's ef_search is set as an
ingest sets it and the client is opened again (Chroma reads the configuration when it loads the index), the
index's load is timed (the first query, as a fresh process meets it), and every query asks `VectorIndex.query` for
the top 64. Yardstick, in the same run and process: exact search, numpy's matrix product over all the vectors (the
true top 64). Recall@64 is the share of the true top 64 that HNSW returned, averaged over the queries; "with ties"
also counts a returned chunk whose exact score equals the true 64th's. Prints a Markdown table and one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.corpus_sentences import chunk_texts, questions
from benchmarks.keyword_scale import DIM, ROOT, TOP_K, hashed
from ragtui.model.chunks import Chunk, ChunkMeta


def index_at(path: Path, name: str, m: int, ef: int) -> Any:
    from ragtui.config import load_settings
    from ragtui.stores.vector import VectorIndex, chroma_client

    settings = load_settings(user_file=path / "none.toml", env={}, overrides=[])
    return VectorIndex(chroma_client(settings.chroma, path), name, "bench-384", hnsw_ef=ef, hnsw_m=m)


def build(path: Path, name: str, m: int, ef: int, construction: int, chunks: list[Chunk],
          vectors: np.ndarray) -> dict[str, float]:
    from ragtui.config import load_settings
    from ragtui.stores.vector import chroma_client, release_embedded

    settings = load_settings(user_file=path / "none.toml", env={}, overrides=[])
    chroma_client(settings.chroma, path).create_collection(      # VectorIndex then opens it as it is
        name, configuration={"hnsw": {"space": "cosine", "ef_search": ef, "max_neighbors": m,
                                      "ef_construction": construction}}, embedding_function=None)
    index = index_at(path, name, m, ef)
    wall, cpu = time.perf_counter(), time.process_time()
    step = 5_000
    for start in range(0, len(chunks), step):
        index.add(chunks[start:start + step], vectors[start:start + step].tolist())
    built = {"build_wall_s": round(time.perf_counter() - wall, 1), "build_cpu_s": round(time.process_time() - cpu, 1)}
    release_embedded(path)
    built["index_mib"] = round(sum(f.stat().st_size for f in path.rglob("*.bin")) / 2**20, 1)
    return built


def search(path: Path, name: str, m: int, ef: int,
           queries: np.ndarray) -> tuple[list[list[str]], list[float], list[float], float]:
    """Every query's top 64 through a freshly opened client with ef_search = `ef`; wall and CPU ms per query, and
    the wall seconds of the first query (Chroma loading the index)."""
    from ragtui.stores.vector import release_embedded

    index = index_at(path, name, m, ef)
    index.collection.modify(configuration={"hnsw": {"ef_search": ef}})   # what an ingest does on a changed ef
    release_embedded(path)                                               # and a new process would load
    index = index_at(path, name, m, ef)
    assert index.hnsw()["ef_search"] == ef and index.hnsw()["max_neighbors"] == m, index.hnsw()
    load = time.perf_counter()
    index.query(queries[0].tolist(), TOP_K)                                # the index load, timed on its own
    load = time.perf_counter() - load
    found, walls, cpus = [], [], []
    for q in queries:
        wall, cpu = time.perf_counter(), time.process_time()
        hits = index.query(q.tolist(), TOP_K)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        found.append([cid for cid, _ in hits])
    release_embedded(path)
    return found, walls, cpus, load


def pct(values: list[float], p: float) -> float:
    return round(float(np.percentile(values, p)), 2)


def load_vectors(folder: Path, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `n` cached chunk vectors (all the whole shards hold, if fewer) and the query vectors."""
    shards = sorted(folder.glob("chunks-[0-9]*[0-9].npy"))
    vectors = np.concatenate([np.load(s) for s in shards])[:n] if shards else np.zeros((0, DIM), np.float32)
    return vectors, np.load(folder / "queries.npy")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--m", default="16,32")
    parser.add_argument("--ef", default="64,128,256,512,1024,4096")
    parser.add_argument("--construction-ef", default="100")
    parser.add_argument("--vectors", type=Path)
    parser.add_argument("--eval-data", type=Path, default=ROOT.parent / "shared" / "data" / "eval")
    args = parser.parse_args()
    ms = [int(x) for x in args.m.split(",")]
    efs = [int(x) for x in args.ef.split(",")]
    constructions = [int(x) for x in args.construction_ef.split(",")]

    if args.vectors:
        vectors, queries = load_vectors(args.vectors, args.chunks)
        queries = queries[:args.queries]
        texts = chunk_texts(args.eval_data, len(vectors))
    else:
        texts = chunk_texts(args.eval_data, args.chunks)
        vectors = np.array([hashed(t) for t in texts], dtype=np.float32)
        queries = np.array([hashed(q) for q in questions(args.eval_data, args.queries)], dtype=np.float32)
    chunks = [Chunk(f"c{i}", t, ChunkMeta("bench", f"d{i // 8}.txt", "0" * 64, "txt", i % 8, 0, len(t)))
              for i, t in enumerate(texts)]

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
    rows: list[dict[str, Any]] = [{"search": "exact (numpy)", "m": None, "cef": None, "ef": None, "recall": 1.0,
                                   "recall_ties": 1.0, "p50_ms": pct(walls, 50), "p95_ms": pct(walls, 95),
                                   "cpu_p50_ms": pct(cpus, 50), "load_s": None}]
    builds = {}
    with tempfile.TemporaryDirectory(prefix="hnsw-recall-") as tmp:
        for m in ms:
            for cef in constructions:
                path, name = Path(tmp) / f"m{m}-c{cef}", f"bench-m{m}-c{cef}"
                builds[f"M={m} construction ef={cef}"] = build(path, name, m, efs[0], cef, chunks, vectors)
                for ef in efs:
                    found, walls, cpus, load = search(path, name, m, ef, queries)
                    recall = float(np.mean([len(truth[i] & set(f)) / TOP_K for i, f in enumerate(found)]))
                    # a returned chunk that ties with the true 64th counts as right (many stand-in vectors tie)
                    ties = float(np.mean([sum(exact[i][int(c[1:])] >= floors[i] for c in f) / TOP_K
                                          for i, f in enumerate(found)]))
                    rows.append({"search": "Chroma HNSW", "m": m, "cef": cef, "ef": ef, "recall": round(recall, 4),
                                 "recall_ties": round(ties, 4), "p50_ms": pct(walls, 50), "p95_ms": pct(walls, 95),
                                 "cpu_p50_ms": pct(cpus, 50), "load_s": round(load, 3)})

    kind = f"all-MiniLM-L6-v2 ({args.vectors})" if args.vectors else "hashed stand-in"
    print(f"{len(vectors):,} chunks x {DIM} dims, {kind}, {len(queries)} queries, top {TOP_K}; "
          f"CPUs: {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")
    for key, built in builds.items():
        print(f"build {key}: {built['build_wall_s']} s wall, {built['build_cpu_s']} CPU-s, "
              f"HNSW files {built['index_mib']} MiB")
    print("\n| search | M | construction ef | ef | recall@64 | with ties | p50 ms | p95 ms | CPU p50 ms | load s |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['search']} | {r['m'] or '-'} | {r['cef'] or '-'} | {r['ef'] or '-'} | {r['recall']:.3f} | "
              f"{r['recall_ties']:.3f} | {r['p50_ms']} | {r['p95_ms']} | {r['cpu_p50_ms']} | {r['load_s'] or '-'} |")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps({"chunks": len(vectors), "vectors": kind, "queries": len(queries), "builds": builds,
                      "rows": rows, "peak_rss_mib": peak}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
