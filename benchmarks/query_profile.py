"""Where a query process's memory and first-query time go, step by step (issue 14).

    python -m benchmarks.query_profile --data-dir DIR --collection NAME [--queries 300] [--eval-data DIR]
                                       [--chroma HOST:PORT]

One fresh process opens an existing collection (keyword_scale builds them)
and takes each step on its own, in order, recording wall and CPU seconds and
the process's memory after it, from /proc/self/status: VmRSS, RssAnon (heap
and anonymous maps: Python objects, numpy arrays, Chroma's native index) and
RssFile (mapped files: shared libraries, memory-mapped postings arrays).
Steps: the engine's imports (what the TUI's warm-up imports), the workspace
and WordNet, the keyword index opened (searcher, segment arrays), its first
query, the Chroma client, the collection's HNSW index loaded (Chroma loads
it on first use), the first vector query, the first whole retrieval, then
whole retrievals plus each leg alone over the natural questions, with the
memory after 10, 100 and all of them. Then the sizes of our own caches. The
query vectors are the keyword_scale stand-in's (no embedder is called).
With --chroma the vectors are read from that Chroma server (`[chroma] host`
and `port`), as in the team set-up: the server, not this process, holds the
HNSW index, so the steps show what a process pays once the server has it.

Prints a Markdown table and one JSON object (`steps`, `caches`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.keyword_scale import TOP_K, collection_arguments, hashed, questions, settings_for

STATUS_FIELDS = ("VmRSS", "RssAnon", "RssFile")
MARKS = (10, 100)       # memory is also recorded after these many queries, and after the last


def memory() -> dict[str, float]:
    """MiB of the process's resident memory now (VmRSS, RssAnon, RssFile) and its peak so far."""
    out: dict[str, float] = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in STATUS_FIELDS:
                out[key] = int(value.split()[0]) / 1024
    out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


class Steps:
    """Runs and records steps: wall and CPU seconds each, memory after each."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = [{"step": "process start", "wall_s": 0.0, "cpu_s": 0.0, **memory()}]

    def run(self, label: str, step: Callable[[], Any]) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        result = step()
        self.rows.append({"step": label, "wall_s": round(time.perf_counter() - wall, 3),
                          "cpu_s": round(time.process_time() - cpu, 3), **memory()})
        return result


class Ticker:
    """A Python thread counting short loops while a step runs: how far the step let other threads (the TUI's
    event loop, an import) go on, as a percentage of the rate the same thread reaches idle."""

    def __init__(self) -> None:
        self.ticks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = self._elapsed = 0.0
        self._idle_rate = 0.0

    def _run(self) -> None:
        while not self._stop.is_set():
            sum(range(10_000))
            self.ticks += 1

    def __enter__(self) -> Ticker:
        self._thread.start()
        time.sleep(0.5)
        self._idle_rate = self.ticks / 0.5
        self.ticks, self._started = 0, time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self._elapsed = time.perf_counter() - self._started
        self._stop.set()
        self._thread.join()

    def share(self) -> float:
        return round(100 * self.ticks / (self._idle_rate * self._elapsed), 1) if self._idle_rate else 0.0


def profile(data_dir: Path, name: str, queries: Sequence[str], *, chroma: str | None = None) -> dict[str, Any]:
    steps = Steps()

    def engine_imports() -> None:
        from ragtui.research.session import preload

        preload()

    steps.run("engine imports (the TUI's warm-up)", engine_imports)
    from ragtui.retrieve.hybrid_retriever import HybridRetriever, QueryEmbeddings
    from ragtui.retrieve.keyword_leg import keyword_search
    from ragtui.workspace import Workspace

    settings = settings_for(data_dir, chroma=chroma)
    workspace = Workspace(settings)
    lookup = steps.run("workspace, WordNet opened", workspace.lexicon.lookup)
    collection = workspace.collection(name)
    model = settings.embed.model
    vectors = {q: hashed(q.lower()) for q in queries}

    def keyword(q: str) -> Any:
        return keyword_search(collection.keyword, q, keyword=settings.keyword, top_k=TOP_K, synonyms=lookup,
                              max_synonyms=settings.synonyms.max_per_word)

    def vector(q: str) -> Any:
        with collection.vector_access():
            return collection.vectors(model).query(vectors[q], TOP_K)

    def open_chroma() -> None:
        with collection.vector_access():
            collection.vectors(model)

    def load_index() -> None:
        with collection.vector_access():
            collection.vectors(model).count()            # what Collection.prepare does for each model

    async def precomputed(_s: Any, q: str, models: Sequence[str]) -> QueryEmbeddings:
        return QueryEmbeddings(vectors={m: vectors[q] for m in models})

    def whole(q: str) -> None:
        asyncio.run(HybridRetriever(settings, [collection], lexicon=workspace.lexicon,
                                    embed=precomputed).aretrieve(q))

    steps.run("keyword index opened (searcher, segment arrays)", collection.keyword.prepare)
    steps.run("first keyword leg", lambda: keyword(queries[0]))
    steps.run("Chroma client and collection", open_chroma)
    with Ticker() as ticker:
        steps.run("HNSW index loaded (first count)", load_index)
    steps.rows[-1]["other_thread_pct"] = ticker.share()
    steps.run("first vector leg", lambda: vector(queries[0]))
    steps.run("first whole retrieval", lambda: whole(queries[0]))
    done = 1
    for mark in (*(m for m in MARKS if m < len(queries)), len(queries)):
        def batch(start: int = done, end: int = mark) -> None:
            for q in queries[start:end]:
                keyword(q)
                vector(q)
                whole(q)

        steps.run(f"after {mark} queries (each: keyword leg, vector leg, whole retrieval)", batch)
        done = mark
    caches = own_caches(collection)
    workspace.close()
    return {"steps": steps.rows, "caches": caches}


def own_caches(collection: Any) -> dict[str, Any]:
    """What ragtui's own caches of the open collection hold: entries and the bytes we can count."""
    keyword = collection.keyword
    chunks = list(keyword._chunks.values())
    text_bytes = sum(len(c.text.encode("utf-8")) for c in chunks)
    postings = keyword._postings
    segments = list(postings._segments.values()) if postings is not None else []
    arrays = sum(s.lengths.nbytes + s._norm[1].nbytes for s in segments)
    cached = [p for s in segments for p in s._postings.values()]
    copied = sum(d.nbytes + f.nbytes for d, f in cached if d.base is None or not _mapped(d))
    return {"chunk_cache_entries": len(chunks), "chunk_cache_text_mb": round(text_bytes / 2**20, 1),
            "segments": len(segments), "segment_arrays_mb": round(arrays / 2**20, 1),
            "postings_cached_terms": len(cached), "postings_in_heap_mb": round(copied / 2**20, 1)}


def _mapped(array: Any) -> bool:
    """Whether a numpy array is a view into a memory-mapped file (its pages are file-backed, not heap)."""
    import mmap

    base = array
    while getattr(base, "base", None) is not None:
        base = base.base
        if isinstance(base, mmap.mmap):
            return True
    return False


def table(result: dict[str, Any]) -> str:
    rows = ["| step | wall s | CPU s | RSS MiB | anon MiB | file MiB |", "|---|---|---|---|---|---|"]
    for r in result["steps"]:
        rows.append(f"| {r['step']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['VmRSS']:.0f} | "
                    f"{r['RssAnon']:.0f} | {r['RssFile']:.0f} |")
    peak = result["steps"][-1]["peak"]
    shares = [f"{r['step']}: {r['other_thread_pct']}%" for r in result["steps"] if "other_thread_pct" in r]
    rows += ["", "another Python thread's progress during " + "; ".join(shares) + " of its idle rate"]
    caches = ", ".join(f"{k} {v}" for k, v in result["caches"].items())
    return "\n".join([*rows, "", f"peak RSS {peak:.0f} MiB; our caches: {caches}"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    collection_arguments(parser)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    result = profile(args.data_dir, args.collection, questions(args.eval_data, args.queries), chroma=args.chroma)
    print(table(result))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
