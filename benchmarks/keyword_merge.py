"""The keyword index's closing merge on its own: CPU and wall of `KeywordIndex.merge()` over an ingest's batch
segments, and what it wrote.

    python -m benchmarks.keyword_merge build DIR [--chunks 40000] [--eval-data ../shared/data/eval]
    python -m benchmarks.keyword_merge merge DIR [--apart PARTS]

`build` writes `--chunks` ~1,500-character chunks re-mixed from the SQuAD and Cranfield sentences (seeded) into a
new keyword index in DIR, one commit of 2,000 chunks at a time: one segment each, as `ragtui ingest` commits its
batches (ingest/pipeline.py BATCH_CHUNKS). `merge` merges the index in DIR (copy DIR first to merge the same
segments with another tree: `cd OTHER_TREE && python -m benchmarks.keyword_merge merge COPY`) and prints one JSON
object: segments left, CPU and wall seconds, and a SHA-256 of the postings file's arrays (two trees that write the
same postings print the same digest). With `--apart`, the merge runs as a large ingest runs it
(`ingest.merging.merge_apart`: a process of its own, the merge cut in up to PARTS groups, each in a process), and
the CPU is the processes' (this one's children, counted once they have ended).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import time
from pathlib import Path

import numpy as np

from benchmarks.corpus_sentences import chunk_texts
from ragtui.model.chunks import Chunk, ChunkMeta
from ragtui.stores.keyword import KeywordIndex

BATCH = 2_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("build", "merge"))
    parser.add_argument("dir", type=Path)
    parser.add_argument("--chunks", type=int, default=40_000)
    parser.add_argument("--apart", type=int, metavar="PARTS", help="merge as a large ingest does, in processes")
    parser.add_argument("--eval-data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/eval")
    args = parser.parse_args()
    if args.step == "build":
        texts = chunk_texts(args.eval_data, args.chunks)
        index = KeywordIndex(args.dir)
        for start in range(0, len(texts), BATCH):
            index.replace_sources([], [Chunk(f"c{i}", texts[i], ChunkMeta("bench", f"d{i // 50}.txt", "0" * 64, "txt",
                                                                          i % 50, 0, len(texts[i])))
                                       for i in range(start, min(len(texts), start + BATCH))])
        index.close()
        return 0
    wall, cpu = time.perf_counter(), _cpu()
    if args.apart:
        from ragtui.ingest.merging import merge_apart

        [segments] = merge_apart([args.dir], parts=args.apart)
    else:
        segments = KeywordIndex(args.dir).merge()
    took = {"merge_cpu_s": round(_cpu() - cpu, 1), "merge_wall_s": round(time.perf_counter() - wall, 1)}
    digest = hashlib.sha256()
    for path in sorted(args.dir.glob("*.bm25_*.npy"), key=lambda p: p.name.split(".bm25_")[1]):
        digest.update(np.load(path).tobytes())
    print(json.dumps({"segments": segments, **took, "postings_sha256": digest.hexdigest()[:16]}))
    return 0


def _cpu() -> float:
    """This process's CPU seconds and its ended children's."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    raise SystemExit(main())
