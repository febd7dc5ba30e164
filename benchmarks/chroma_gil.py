"""Does an embedded Chroma call let the process's other Python threads run? Their pace during each call.

    python -m benchmarks.chroma_gil [--vectors 20000] [--page 4096]

An embedded PersistentClient in a temporary folder gets `--vectors` random 384-dimension vectors, then a thread
counts in a pure-Python loop while the main thread makes one call of each kind: `add` of `--page` new vectors,
`delete` of them, `get` of a page of ids with their vectors, `query` of 64 nearest. The thread's pace during
the call, over its pace while the main thread sleeps, says how much of the call held Python's lock (0%: all of it).
chromadb's Rust bindings (rust/python_bindings/src/bindings.rs) run `get` and `query` inside `py.allow_threads`
and the writes without it. In an ingest, that lock held means the reading, the keyword index and the TUI's
event loop all wait for each vector write. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

DIM = 384


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vectors", type=int, default=20_000)
    parser.add_argument("--page", type=int, default=4096)
    args = parser.parse_args()
    import chromadb
    from chromadb.config import Settings

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        client = chromadb.PersistentClient(path=folder, settings=Settings(anonymized_telemetry=False))
        collection = client.get_or_create_collection("gil-probe", configuration={"hnsw": {"space": "cosine"}},
                                                     embedding_function=None)
        step = client.get_max_batch_size()
        for start in range(0, args.vectors, step):
            count = min(step, args.vectors - start)
            collection.add(ids=[f"a{i}" for i in range(start, start + count)],
                           embeddings=rng.standard_normal((count, DIM)).astype(np.float32))
        ticks, stop = [0], threading.Event()

        def spin() -> None:
            while not stop.is_set():
                ticks[0] += 1

        def pace(call: Callable[[], Any]) -> tuple[float, float]:
            began, start = ticks[0], time.perf_counter()
            call()
            took = time.perf_counter() - start
            return (ticks[0] - began) / took, took

        thread = threading.Thread(target=spin, daemon=True)
        thread.start()
        idle, _ = pace(lambda: time.sleep(1.0))
        new = [f"b{i}" for i in range(args.page)]
        vectors = rng.standard_normal((args.page, DIM)).astype(np.float32)
        calls: dict[str, Callable[[], Any]] = {
            "add": lambda: collection.add(ids=new, embeddings=vectors),
            "get": lambda: collection.get(ids=new, include=["embeddings"]),
            "query": lambda: collection.query(query_embeddings=vectors[:1], n_results=64, include=["distances"]),
            "delete": lambda: collection.delete(ids=new),
        }
        out: dict[str, Any] = {"vectors": args.vectors, "page": args.page}
        for name, call in calls.items():
            during, took = pace(call)
            out[name] = {"seconds": round(took, 3), "other_thread_pace": round(during / idle, 3)}
        stop.set()
        thread.join()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
