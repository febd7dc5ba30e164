"""The user's path at scale: `ragtui ingest` of generated text files, then the query side measured on what it built.

    python -m benchmarks.ingest_scale --chunks 100000 [--queries 300] [--data-dir DIR] [--eval-data DIR]
        [--wordnet ../shared/data/wordnet/oewn-2024.xml.gz] [--workers 1] [--build-only] [--no-embed]
        [--embed-in-build]

1. Files: `--chunks / 50` text files of ~50 chunks each (36,000 characters of
   SQuAD and Cranfield sentences in paragraphs, 100 files a folder), written
   once into the data dir.
2. Build: `python -m ragtui ingest FOLDER -c NAME` in a subprocess, the
   embedder unreachable (a closed loopback port, one attempt), as a user's
   keyword-only ingest; `chunk.size_tokens = 384`. Wall, CPU of the whole
   process tree (the ingest and its extraction workers, from /proc while it
   runs and from the kernel's accounting after), peak RSS of the largest
   process, and CPU per 1,000 chunks as the progress lines come (first and
   last tenth of the chunks, so the CPU per batch can be compared).
   Yardstick in the same run: a fixed pure-Python CPU loop timed just before
   and just after the build (its wall time against its CPU time says how
   loaded the machine was; the build's CPU over the loop's CPU is a figure
   other machines can compare).
3. Embedding pass (unless `--no-embed`): the pending chunks embedded by the
   in-process hashed stand-in of `keyword_scale` (384 dims) and written to
   Chroma, so the vector leg has a full HNSW index. With `--embed-in-build`
   there is no second pass: the build's `ragtui ingest` has the stand-in as
   its embedder, so the embedding runs beside the reading as a reachable
   embedder's does, and the progress lines give the write rate over the first
   and the last tenth of the pass. Either way the collection's disk is reported.
4. Query side: `keyword_scale --measure` in a fresh process (keyword leg by
   tier with SQLite FTS5 beside it, vector leg, whole retrieval, first query
   after opening, peak RSS), then its table.

Prints the build's figures, the query table and one JSON object. A second run
with the same data dir reuses the files and the built collection.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus_sentences import draw, sentences
from benchmarks.keyword_scale import ROOT, settings_for, table

CHUNKS_PER_FILE = 50
FILE_CHARS = 36_000          # ~50 chunks at 384 tokens and 50% overlap
FILES_PER_FOLDER = 100
YARDSTICK_LOOPS = 3_000_000


def make_files(folder: Path, files: int, eval_dir: Path) -> None:
    """`files` text files of paragraphs of sentences drawn from the eval corpora (seeded: the same every time)."""
    done = folder / ".complete"
    if done.exists():
        return
    pool = sentences(eval_dir)
    rng = random.Random(files)
    for i in range(files):
        parts = draw(rng, pool, FILE_CHARS)
        sub = folder / f"part{i // FILES_PER_FOLDER:04d}"
        sub.mkdir(parents=True, exist_ok=True)
        text = "\n\n".join(" ".join(parts[j:j + 6]) for j in range(0, len(parts), 6))
        (sub / f"doc{i:07d}.txt").write_text(text + "\n", encoding="utf-8")
    done.write_text("")


def yardstick() -> dict[str, float]:
    """A fixed pure-Python loop: CPU seconds it took and wall seconds (their ratio: the machine's load)."""
    t, c = time.perf_counter(), time.process_time()
    x = 0
    for i in range(YARDSTICK_LOOPS):
        x = (x * 31 + i) % 1_000_003
    return {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c}


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a live process and its live descendants (user + system, from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total, stack = 0.0, [pid]
    while stack:
        p = stack.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                stack.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError, IndexError):
            continue
    return total


# `python -c STAND_IN ARGS` is `python -m ragtui ARGS` with keyword_scale's hashed stand-in as the embedder.
STAND_IN = ("import ragtui.ingest.embedding as e; from benchmarks.keyword_scale import HashEmbedder; "
            "e.Embedder = HashEmbedder; from ragtui.cli import main; raise SystemExit(main())")


def build(data_dir: Path, name: str, folder: Path, workers: int, embed: bool = False) -> dict[str, Any]:
    """`ragtui ingest` in a subprocess, keyword-only (the embedder unreachable) or, with `embed`, with the
    in-process hashed stand-in embedding beside the reading as a reachable embedder would; its progress lines
    give CPU against chunks, and the embedded count against time."""
    start = ["-c", STAND_IN] if embed else ["-m", "ragtui", "--ollama-host", "http://127.0.0.1:9"]
    cmd = [sys.executable, *start, "--data-dir", str(data_dir),
           "--set", "embed.model=hash-384", "--set", "chunk.size_tokens=384", "--set", "embed.retries=1",
           "--set", f"ingest.workers={workers}", "ingest", str(folder), "-c", name]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    samples: list[tuple[float, int, float]] = []      # (wall, chunks, tree CPU) at each progress line
    embedded: list[tuple[float, int]] = []              # (wall, chunks embedded) at each progress line
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("progress: "):
            chunks = int(line.split("files  ", 1)[1].split(" chunks", 1)[0])
            samples.append((time.perf_counter() - t, chunks, _tree_cpu(proc.pid)))
            embedded.append((samples[-1][0], int(line.split(" chunks  ", 1)[1].split(" embedded", 1)[0])))
        else:
            lines.append(line.rstrip("\n"))
    code = proc.wait()
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise SystemExit(f"ragtui ingest exited {code}:\n" + "\n".join(lines[-20:]))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stages = next((x for x in lines if x.startswith("stages: ")), "")
    chunks = int(next(x for x in lines if x.startswith("chunks: ")).split()[1].replace(",", ""))
    return {"command": " ".join(cmd), "wall_s": wall, "cpu_s": cpu, "chunks": chunks, "peak_rss_mb":
            after.ru_maxrss / 1024, "stages": stages, **_per_batch(samples, chunks),
            **(_embed_rates(embedded) if embed else {})}


def _embed_rates(embedded: list[tuple[float, int]]) -> dict[str, Any]:
    """Chunks embedded and stored per second (wall) over the first and the last tenth of the embedding pass. The
    last tenth ends at 99% of the chunks: the progress line that reports the last ones can come only after the
    closing merge, which would count the merge's time as the writes'."""
    total = embedded[-1][1] if embedded else 0

    def rate(lo: float, hi: float) -> float | None:
        inside = [e for e in embedded if lo * total <= e[1] <= hi * total]
        if len(inside) < 2 or inside[-1][0] == inside[0][0]:
            return None
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])

    done = next((w for w, n in embedded if n >= 0.99 * total), None)
    return {"embedded": total, "first_tenth_embedded_per_s": rate(0.0, 0.1),
            "last_tenth_embedded_per_s": rate(0.9, 0.99), "embedded_99pct_at_wall_s": done}


def _per_batch(samples: list[tuple[float, int, float]], chunks: int) -> dict[str, Any]:
    """CPU and wall per 1,000 chunks over the first and the last tenth of the chunks read (the closing merge and
    the start-up left out), and when the last chunk was read (the merge runs after)."""
    def rate(lo: float, hi: float) -> tuple[float, float] | None:
        inside = [s for s in samples if lo * chunks <= s[1] <= hi * chunks]
        if len(inside) < 2 or inside[-1][1] == inside[0][1]:
            return None
        per = 1000 / (inside[-1][1] - inside[0][1])
        return (inside[-1][2] - inside[0][2]) * per, (inside[-1][0] - inside[0][0]) * per

    first, last = rate(0.02, 0.12), rate(0.88, 0.999)
    read_all = next((s for s in samples if s[1] >= chunks), samples[-1] if samples else (0.0, 0, 0.0))
    return {"first_tenth_cpu_s_per_1k": first and first[0], "last_tenth_cpu_s_per_1k": last and last[0],
            "first_tenth_wall_s_per_1k": first and first[1], "last_tenth_wall_s_per_1k": last and last[1],
            "all_read_at_wall_s": read_all[0], "all_read_at_cpu_s": read_all[2]}


def embed_pass(data_dir: Path, name: str, folder: Path) -> dict[str, Any]:
    """The same folder again through the workspace with the hashed stand-in embedder: only the pending chunks
    are embedded and written to Chroma (the files are unchanged)."""
    import ragtui.ingest.embedding as embedding
    from benchmarks.keyword_scale import HashEmbedder
    from ragtui.events import IngestFinished
    from ragtui.workspace import Workspace

    async def run() -> Any:
        embedding.Embedder = HashEmbedder   # type: ignore[misc]  # the benchmark's stand-in for Ollama
        async with Workspace(settings_for(data_dir)) as workspace:
            async for event in workspace.ingest([folder], name):
                if isinstance(event, IngestFinished):
                    return event.report
        return None

    t, c = time.perf_counter(), time.process_time()
    report = asyncio.run(run())
    return {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
            "embedded": report.chunks_embedded if report else 0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "ragtui-ingest-scale")
    parser.add_argument("--eval-data", type=Path, default=ROOT.parent / "shared" / "data" / "eval")
    parser.add_argument("--wordnet", type=Path, metavar="FILE",
                        help="a WN-LMF file installed into the data dir when it has none (synonyms on, as the "
                             "product runs)")
    parser.add_argument("--workers", type=int, default=1, help="ingest.workers of the build")
    parser.add_argument("--build-only", action="store_true", help="stop after the build")
    parser.add_argument("--no-embed", action="store_true", help="no embedding pass (the vector leg is empty)")
    parser.add_argument("--embed-in-build", action="store_true",
                        help="the build embeds beside its reading (the stand-in as a reachable embedder), "
                             "instead of a keyword-only build and a separate embedding pass")
    parser.add_argument("--embed-pass", nargs=2, metavar=("NAME", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    if args.embed_pass:
        print(json.dumps(embed_pass(data_dir, args.embed_pass[0], Path(args.embed_pass[1]))))
        return 0
    files = max(1, args.chunks // CHUNKS_PER_FILE)
    name = f"cli-{args.chunks}"
    folder = data_dir / f"files-{files}"
    t = time.perf_counter()
    make_files(folder, files, args.eval_data)
    out: dict[str, Any] = {"files": files, "make_files_s": time.perf_counter() - t}
    settings = settings_for(data_dir)
    if not _built(settings, name):        # new, or a build that did not finish (the ingest resumes it)
        out["yardstick_before"] = yardstick()
        out["build"] = build(data_dir, name, folder, args.workers, embed=args.embed_in_build)
        out["yardstick_after"] = yardstick()
        out["disk"] = collection_disk(data_dir / "collections" / name)
        print(build_lines(out), file=sys.stderr, flush=True)
    if args.build_only:
        print(json.dumps(out))
        return 0
    if not args.no_embed and not args.embed_in_build:
        proc = subprocess.run([sys.executable, "-m", "benchmarks.ingest_scale", "--data-dir", str(data_dir),
                               "--embed-pass", name, str(folder)], capture_output=True, text=True, check=True,
                              cwd=ROOT)
        out["embed_pass"] = json.loads(proc.stdout.splitlines()[-1])
        print(f"embedding pass: {out['embed_pass']}", file=sys.stderr, flush=True)
    if args.wordnet:
        from ragtui.retrieve.wordnet import install, installed

        if not installed(settings.synonyms.lexicon, data_dir):
            install(settings.synonyms.lexicon, data_dir, args.wordnet)
    proc = subprocess.run([sys.executable, "-m", "benchmarks.keyword_scale", "--measure", name, "--queries",
                           str(args.queries), "--data-dir", str(data_dir), "--eval-data", str(args.eval_data)],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    out["query"] = json.loads(proc.stdout.splitlines()[-1])
    print(table(out.get("build", {}).get("chunks", args.chunks), None, out["query"]), flush=True)
    print(json.dumps(out))
    return 0


def collection_disk(path: Path) -> dict[str, int]:
    """Bytes of a collection folder: the whole, and its Chroma, records and keyword index."""
    def size(p: Path) -> int:
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else 0

    return {"total": size(path), "chroma": size(path / "chroma"), "whoosh": size(path / "whoosh"),
            "records": sum(f.stat().st_size for f in path.glob("records.sqlite3*"))}


def _built(settings: Any, name: str) -> bool:
    from ragtui.library import CollectionRegistry

    registry = CollectionRegistry(settings)
    if not registry.exists(name):
        return False
    collection = registry.open(name)
    try:
        return collection.manifest.get("state") in ("needs embeddings", "ready")
    finally:
        collection.close()


def build_lines(out: dict[str, Any]) -> str:
    b, before, after = out["build"], out["yardstick_before"], out["yardstick_after"]
    stick = (before["cpu_s"] + after["cpu_s"]) / 2

    def per_k(key: str) -> str:
        return "-" if b[key] is None else f"{b[key]:.2f}"

    return (f"build through `ragtui ingest` of {out['files']:,} files: {b['chunks']:,} chunks in {b['wall_s']:.0f} s "
            f"wall / {b['cpu_s']:.0f} s CPU (the ingest and its workers; {b['chunks'] / b['wall_s']:.0f} chunks/s), "
            f"peak RSS {b['peak_rss_mb']:.0f} MiB; all chunks read at {b['all_read_at_wall_s']:.0f} s wall "
            f"({b['all_read_at_cpu_s']:.0f} CPU-s), then the closing merge; CPU s per 1,000 chunks first tenth "
            f"{per_k('first_tenth_cpu_s_per_1k')}, last tenth {per_k('last_tenth_cpu_s_per_1k')}; wall s per 1,000 "
            f"chunks {per_k('first_tenth_wall_s_per_1k')} -> {per_k('last_tenth_wall_s_per_1k')}\n"
            f"yardstick ({YARDSTICK_LOOPS:,}-step Python loop) before / after: {before['cpu_s']:.2f} / "
            f"{after['cpu_s']:.2f} CPU-s, {before['wall_s']:.2f} / {after['wall_s']:.2f} s wall; build CPU = "
            f"{b['cpu_s'] / stick:.0f} yardsticks\n{b['stages']}")



if __name__ == "__main__":
    raise SystemExit(main())
