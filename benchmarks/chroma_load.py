"""Chroma alone opening an embedded collection's HNSW index: import, client, the first `get` (which loads the
index), one query; wall and CPU of each and the peak RSS. Run it under `perf record -g` to see where the load goes.

    python -m benchmarks.chroma_load DIR/collections/NAME/chroma
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from typing import Any

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chroma", help="a collection's chroma folder")
    args = parser.parse_args()
    steps: dict[str, tuple[float, float]] = {}
    wall, cpu = time.perf_counter(), time.process_time()

    def step(name: str) -> None:
        nonlocal wall, cpu
        steps[name] = (round(time.perf_counter() - wall, 3), round(time.process_time() - cpu, 3))
        wall, cpu = time.perf_counter(), time.process_time()

    import chromadb
    from chromadb.config import Settings
    step("import")
    client = chromadb.PersistentClient(path=args.chroma, settings=Settings(anonymized_telemetry=False))
    [collection] = client.list_collections()[:1]
    step("client")
    got: Any = collection.get(limit=1, include=["embeddings"])
    step("load")
    first = np.asarray(got["embeddings"][:1], dtype=np.float32)
    collection.query(query_embeddings=first, n_results=64, include=["distances"])
    step("query")
    print(json.dumps({"steps_wall_cpu_s": steps,
                      "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
