"""The embedding pass of an ingest and what it leaves on disk: vector writes per second over the pass, Chroma's disk.

    python -m benchmarks.vector_writes --source DIR/collections/NAME --work DIR [--folder FILES] [--sync-threshold N]

1. The collection folder `--source` (a keyword-only build of `ingest_scale
   --build-only`: every chunk pending) is copied to `--work`, so that the same
   start serves the code before and after a change.
2. The ingest runs again over the same files (`--folder`; unchanged, so nothing
   is re-read) through `Workspace.ingest`, the call `ragtui ingest` makes, with
   the in-process hashed stand-in of `keyword_scale` as the embedder (384
   dimensions, no HTTP): only the pending chunks are embedded and written to
   Chroma. Each write (`VectorIndex.add` in this process, or the call to the
   ingest's vector process, `RemoteVectorIndex.add`, when it has one) is timed
   (wall: its work runs in chromadb's own Rust threads, or in the other
   process), so the write rate can be compared between the first and the last
   tenth of the chunks (does it fall as the HNSW graph grows?); the CPU is the
   whole process's over the pass, and its children's (the vector process,
   the extraction workers) beside it. Every write's (chunks, wall s) is in the
   output too. `--sync-threshold N` sets Chroma's `sync_threshold` on the
   copy's vector collections first: Chroma writes the HNSW files and re-pickles
   its whole id map once N records have come in since it last did, so with N a
   multiple of the page only every (N / page)-th write pays for that, and the
   cost of one such write at the collection's size is read off
   (`write_out_split`).
3. Disk after the pass: the Chroma folder, its SQLite file by table and index
   (SQLite's dbstat), per chunk.

Yardstick in the same run: `ingest_scale.yardstick` before and after. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.ingest_scale import yardstick


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def sqlite_tables(path: Path, top: int = 8) -> dict[str, int]:
    """Bytes per table or index of an SQLite file, largest first."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    finally:
        db.close()
    return {name: int(size) for name, size in rows[:top]}


def _children_cpu() -> float:
    """CPU seconds of this process's waited-for children (its extraction workers and vector process)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def embedding_pass(work: Path, folder: Path) -> dict[str, Any]:
    import ragtui.ingest.embedding as embedding
    import ragtui.stores.vector as vector
    import ragtui.stores.vector_process as vector_process
    from benchmarks.keyword_scale import HashEmbedder, settings_for
    from ragtui.events import IngestFinished
    from ragtui.workspace import Workspace

    writes: list[tuple[int, float]] = []        # (chunks, wall s) of each write

    def timed(add: Any) -> Any:
        def timed_add(self: Any, chunks: Any, embeddings: Any) -> None:
            wall = time.perf_counter()
            add(self, chunks, embeddings)
            writes.append((len(chunks), time.perf_counter() - wall))
        return timed_add

    # in this process, or (ingest.vector_process_files) as the ingest's call to its vector process
    vector.VectorIndex.add = timed(vector.VectorIndex.add)                      # type: ignore[method-assign]
    vector_process.RemoteVectorIndex.add = timed(vector_process.RemoteVectorIndex.add)  # type: ignore[method-assign]
    embedding.Embedder = HashEmbedder              # type: ignore[misc]  # the benchmark's stand-in for Ollama

    async def run() -> Any:
        async with Workspace(settings_for(work.parent.parent)) as workspace:
            async for event in workspace.ingest([folder], work.name):
                if isinstance(event, IngestFinished):
                    return event.report
        return None

    t, c, children = time.perf_counter(), time.process_time(), _children_cpu()
    report = asyncio.run(run())
    out: dict[str, Any] = {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
                           "children_cpu_s": _children_cpu() - children,
                           "embedded": report.chunks_embedded if report else 0,
                           "stages": dict(report.stage_s) if report else {}}
    total = sum(n for n, _ in writes)
    for name, lo, hi in (("first_tenth", 0.0, 0.1), ("last_tenth", 0.9, 1.0)):
        part = [(n, wall) for at, n, wall in _after(writes) if lo * total <= at < hi * total]
        chunks = sum(n for n, _ in part)
        out[name] = {"chunks": chunks, "chunks_per_s_wall": chunks / sum(w for _, w in part)}
    out["writes_wall_s"] = sum(w for _, w in writes)
    out["writes"] = [(n, round(wall, 4)) for n, wall in writes]
    return out


def _after(writes: list[tuple[int, float]]) -> Iterator[tuple[int, int, float]]:
    """Each write as (chunks written before it, its chunks, its wall s)."""
    done = 0
    for n, wall in writes:
        yield done, n, wall
        done += n


def write_out_split(writes: list[tuple[int, float]], every: int) -> dict[str, Any]:
    """Each of the first, middle and last tenths of the writes, split into those after which Chroma wrote its
    files out (once `every` records have come in since it last did, as `local_hnsw.rs` counts) and the rest:
    how many, the mean write and the chunks per second of each."""
    total = sum(n for n, _ in writes)
    since, rows = 0, []
    for at, n, wall in _after(writes):
        since += n
        rows.append((at, n, wall, since >= every))
        since = 0 if since >= every else since
    out: dict[str, Any] = {}
    for name, lo, hi in (("first_tenth", 0.0, 0.1), ("middle_tenth", 0.45, 0.55), ("last_tenth", 0.9, 1.0)):
        for kind, flag in (("with_write_out", True), ("without", False)):
            part = [(n, wall) for at, n, wall, out_then in rows if lo * total <= at < hi * total and out_then == flag]
            if part:
                wall_s = sum(w for _, w in part)
                out[f"{name}_{kind}"] = {"writes": len(part), "mean_write_s": wall_s / len(part),
                                         "chunks_per_s_wall": sum(n for n, _ in part) / wall_s}
    return out


def set_sync_threshold(chroma: Path, every: int) -> list[str]:
    """Set Chroma's `sync_threshold` (how many records between two writes of the HNSW files) on every
    collection of an embedded Chroma folder; returns their names."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(chroma), settings=Settings(anonymized_telemetry=False))
    names = []
    for collection in client.list_collections():
        collection.modify(configuration={"hnsw": {"sync_threshold": every}})
        names.append(collection.name)
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="a collection folder with its chunks pending")
    parser.add_argument("--work", type=Path, required=True, help="where the copy goes: DATA_DIR/collections/NAME")
    parser.add_argument("--folder", type=Path, required=True, help="the files the collection was built from")
    parser.add_argument("--sync-threshold", type=int, metavar="N",
                        help="set Chroma's sync_threshold on the copy's vector collections first")
    args = parser.parse_args()
    work = args.work.resolve()
    if work.exists():
        shutil.rmtree(work)
    work.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(args.source.resolve(), work)
    synced = set_sync_threshold(work / "chroma", args.sync_threshold) if args.sync_threshold else []
    before = yardstick()
    result = embedding_pass(work, args.folder.resolve())
    if args.sync_threshold:
        result["write_out_split"] = write_out_split(result["writes"], args.sync_threshold)
    after = yardstick()
    chroma = work / "chroma"
    sqlite_file = chroma / "chroma.sqlite3"
    chunks = result["embedded"]
    disk = {"chroma_bytes": folder_bytes(chroma), "chroma_sqlite_bytes": sqlite_file.stat().st_size,
            "records_bytes": sum(p.stat().st_size for p in work.glob("records.sqlite3*")),
            "whoosh_bytes": folder_bytes(work / "whoosh"), "sqlite_tables": sqlite_tables(sqlite_file)}
    disk["chroma_bytes_per_chunk"] = disk["chroma_bytes"] / chunks if chunks else None
    disk["chroma_sqlite_bytes_per_chunk"] = disk["chroma_sqlite_bytes"] / chunks if chunks else None
    print(json.dumps({"pass": result, "disk": disk, "sync_threshold_set_on": synced,
                      "yardstick_before": before, "yardstick_after": after}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
