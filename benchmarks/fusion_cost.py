"""CPU per merge of one collection's legs, per retrieve.fusion: what choosing one costs a query.

    python -m benchmarks.fusion_cost [--hits 100] [--repeat 2000]

Each leg returns `--hits` chunks (ragtui eval's depth), half of them found by
both legs, with random scores; `hybrid_retriever.fuse` merges them as a query
does. The methods run interleaved, so load on a shared machine falls on each
alike; RRF, the default, is the yardstick. Prints the median CPU microseconds
per merge of each method and its ratio to RRF's.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hits", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()

    from ragtui.model.chunks import Chunk, ChunkMeta
    from ragtui.retrieve.hybrid_retriever import Scored, fuse

    rng = random.Random(42)
    scored = []
    for i in range(args.hits * 3 // 2):
        chunk = Chunk(id=f"c{i}", text="", meta=ChunkMeta(collection="c", source=f"s{i}", file_hash="h",
                                                          format="txt", chunk_index=0, char_start=0, char_end=0,
                                                          word_count=0))
        in_vector, in_keyword = i < args.hits, i >= args.hits // 2
        scored.append(Scored(chunk, "c", vector=rng.uniform(0.2, 0.9) if in_vector else None,
                             keyword=rng.uniform(1.0, 25.0) if in_keyword else None))
    methods = ("rrf", "norm", "boost")
    samples: dict[str, list[float]] = {m: [] for m in methods}
    for _ in range(args.repeat):
        for method in methods:
            t = time.process_time()
            fuse(scored, method, weight=0.15, rrf_k=20, answered=2, raw_single=False)
            samples[method].append(time.process_time() - t)
    base = statistics.median(samples["rrf"])
    for method in methods:
        median = statistics.median(samples[method])
        print(f"{method:6} {median * 1e6:8.1f} us CPU per merge ({median / base:.2f} x rrf), "
              f"{len(scored)} chunks, {args.repeat} merges")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
