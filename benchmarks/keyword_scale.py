"""The keyword leg at scale (issue 14): build through the product's ingest, query from a fresh process, FTS5 beside.

    python -m benchmarks.keyword_scale --chunks 10000 [--queries 300] [--data-dir DIR] [--eval-data DIR] [--build-only]
        [--wordnet ../shared/data/wordnet/oewn-2024.xml.gz]

1. Build: in-memory documents re-mixed from the SQuAD and Cranfield sentences
   go through `ingest_documents` (chunking, entropy filter, records, Whoosh) at
   `chunk.size_tokens = 384` (~1,500-char chunks, as perf-baselines.md), first
   with the embedder unavailable (the build the target is about: embedding
   excluded), then a second ingest embeds the pending chunks with an in-process
   hashed bag-of-words stand-in (384 dims) and writes them to Chroma. Every
   keyword-index batch commit and the closing merge are timed.
2. Query, in a new process (`--measure`): after the engine's imports (as the
   TUI's warm-up), the collection is opened and the first whole retrieval
   timed from the open (both legs, as a query runs them: Chroma's HNSW load
   included), then every query, one at a time, wall and
   CPU (process time): the keyword leg (by the tier that answered), the vector
   leg (Chroma top-k), the whole retrieval (both legs, fusion,
   postprocessors; the query vector precomputed, so embedding is excluded),
   and the process's peak RSS. A second new process (`benchmarks.query_profile`)
   takes the same work step by step with the memory after each step.
3. Yardstick: SQLite FTS5 (porter tokenizer) over the same chunk texts, in the
   same query process, with each query's kept words: AND of them for queries
   our leg answered in tier 1, OR for tier 2, bm25() order, top 64. On disk
   (a file in the data dir, built once, like our index), returning the chunks'
   text (our leg returns chunks), run right after our leg on each query so
   both meet the same page cache; then in memory, with text and row ids only.

Queries: SQuAD dev questions and Cranfield queries (natural questions). The
data dir keeps the built collection (`--data-dir`), so a second run measures
without rebuilding. Prints a Markdown table and one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from benchmarks.corpus_sentences import draw, questions, sentences
from ragtui.config import Settings, load_settings

ROOT = Path(__file__).resolve().parent.parent
DIM = 384
WORD = re.compile(r"[a-z0-9]+")
DOC_CHARS = 12_000       # ~15 chunks per document at 384 tokens and 50% overlap
TOP_K = 64


class HashEmbedder:
    """In-process stand-in for the Ollama embedder: signed hashed bag of words, unit length."""

    _slots: ClassVar[dict[str, tuple[int, float]]] = {}

    def __init__(self, settings: Settings, model: str) -> None:
        self.model = model
        self.dimension: int | None = None        # what the pipeline reads and sets on an Embedder
        self.context_tokens: int | None = None
        self.split = 0

    async def expect(self, index_dimension: int | None) -> None:
        self.dimension = DIM

    async def embed_chunks(self, chunks: Sequence[Any], done: Any = None) -> list[list[float]]:
        return [hashed(c.text) for c in chunks]


def hashed(text: str) -> list[float]:
    slots = HashEmbedder._slots
    vec = np.zeros(DIM)
    for w in WORD.findall(text.lower()):
        if (slot := slots.get(w)) is None:
            h = zlib.crc32(w.encode())
            slot = slots[w] = (h % DIM, 1.0 if (h >> 16) & 1 else -1.0)
        vec[slot[0]] += slot[1]
    norm = float(np.linalg.norm(vec)) or 1.0
    return (vec / norm).tolist()


class NoEmbedder(HashEmbedder):
    """The embedder of the build pass: unavailable at once, so the ingest indexes without vectors."""

    async def embed_chunks(self, chunks: Sequence[Any], done: Any = None) -> list[list[float]]:
        from ragtui.ingest.embedding import EmbedUnavailable

        raise EmbedUnavailable("benchmark build pass: embedding excluded")


def overrides_for(data_dir: Path, *, ollama: str = "http://127.0.0.1:9", chroma: str | None = None) -> list[str]:
    """The `--set` settings of a benchmark collection: the hashed stand-in's model, 384-token chunks, Ollama (a
    closed port unless given) and, when `chroma` (HOST:PORT) is given, the Chroma server holding its vectors."""
    host, _, port = (chroma or "").rpartition(":")
    return [f"storage.data_dir={data_dir}", "embed.model=hash-384", "chunk.size_tokens=384", f"ollama.host={ollama}",
            *((f"chroma.host={host}", f"chroma.port={port}") if chroma else ())]


def settings_for(data_dir: Path, *, chroma: str | None = None) -> Settings:
    return load_settings(user_file=data_dir / "none.toml", env={}, overrides=overrides_for(data_dir, chroma=chroma))


def collection_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a benchmark that measures a collection built before: where it is, the questions' corpora,
    and the Chroma server holding its vectors (embedded when left out)."""
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--collection", required=True)
    parser.add_argument("--eval-data", type=Path, default=ROOT.parent / "shared" / "data" / "eval")
    parser.add_argument("--chroma", metavar="HOST:PORT", help="read the vectors from this Chroma server")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else float("nan")


# --- build -------------------------------------------------------------------------------------

def build(settings: Settings, name: str, chunks: int, eval_dir: Path, *, embed: bool = True) -> dict[str, Any]:
    import ragtui.ingest.embedding as embedding
    from ragtui.events import IngestFinished
    from ragtui.ingest.pipeline import BATCH_CHUNKS
    from ragtui.stores.keyword import KeywordIndex
    from ragtui.workspace import Workspace

    pool = sentences(eval_dir)
    rng = random.Random(chunks)
    docs_needed = max(1, chunks // 15)

    def documents() -> Any:
        for i in range(docs_needed):
            yield f"doc{i:06d}.txt", " ".join(draw(rng, pool, DOC_CHARS))

    batches: list[dict[str, float]] = []
    merges: list[float] = []
    merges_cpu: list[float] = []
    replace, merge = KeywordIndex.replace_sources, KeywordIndex.merge

    def timed_replace(self: KeywordIndex, sources: Any, new: Any, tokens: Any = None) -> int:
        t, c = time.perf_counter(), time.process_time()
        n = replace(self, sources, new, tokens)
        batches.append({"chunks": n, "wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c})
        return n

    def timed_merge(self: KeywordIndex) -> int:
        t, c = time.perf_counter(), time.process_time()
        left = merge(self)
        merges.append(time.perf_counter() - t)
        merges_cpu.append(time.process_time() - c)
        return left

    async def ingest(embedder: type) -> Any:
        embedding.Embedder = embedder   # type: ignore[misc]  # the benchmark's stand-in for Ollama
        async with Workspace(settings) as workspace:
            async for event in workspace.ingest_documents(name, documents()):
                if isinstance(event, IngestFinished):
                    return event.report
        return None

    KeywordIndex.replace_sources = timed_replace   # type: ignore[method-assign]
    KeywordIndex.merge = timed_merge               # type: ignore[method-assign]
    t, c = time.perf_counter(), time.process_time()
    report = asyncio.run(ingest(NoEmbedder))
    built = {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c}
    rng = random.Random(chunks)                    # the same documents again: unchanged, only embedded
    t = time.perf_counter()
    embedded = asyncio.run(ingest(HashEmbedder)) if embed else None
    full = [b for b in batches if b["chunks"] >= BATCH_CHUNKS] or batches    # a short last batch is not compared
    per_k = [b["wall_s"] / b["chunks"] * 1000 for b in full]
    cpu_k = [b["cpu_s"] / b["chunks"] * 1000 for b in full]
    return {"first_batch_cpu_s_per_1k": cpu_k[0], "last_batch_cpu_s_per_1k": cpu_k[-1],
            "max_batch_cpu_s_per_1k": max(cpu_k), "chunks": report.chunks_indexed, "documents": docs_needed,
            "build": built,
            "stages_s": report.stage_s, "batches": len(batches),
            "first_batch_s_per_1k": per_k[0], "last_batch_s_per_1k": per_k[-1], "max_batch_s_per_1k": max(per_k),
            "batches_wall_s": [round(b["wall_s"], 2) for b in batches],
            "batches_cpu_s": [round(b["cpu_s"], 2) for b in batches], "merge_s": merges[0] if merges else 0.0,
            "merge_cpu_s": merges_cpu[0] if merges_cpu else 0.0,
            "embed_pass_s": time.perf_counter() - t if embedded else None,
            "embed_stages_s": embedded.stage_s if embedded else None,
            "embedded": embedded.chunks_embedded if embedded else 0}


# --- measure (a fresh process) ----------------------------------------------------------------

def measure(settings: Settings, name: str, queries: list[str], memory_fts5: bool = True) -> dict[str, Any]:
    from ragtui.research.session import preload

    t, c = time.perf_counter(), time.process_time()
    preload()                                   # what the TUI's warm-up imports (chromadb, llama_index, wn)
    imports = (time.perf_counter() - t, time.process_time() - c)
    from ragtui.retrieve.hybrid_retriever import HybridRetriever, QueryEmbeddings
    from ragtui.retrieve.keyword_leg import keyword_search
    from ragtui.retrieve.postprocess import postprocessors
    from ragtui.workspace import Workspace

    workspace = Workspace(settings)
    lookup = workspace.lexicon.lookup()
    model = settings.embed.model
    vectors = {q: hashed(q.lower()) for q in queries}
    on_disk = sqlite3.connect(fts5_file(settings, name))

    def leg(q: str) -> Any:
        return keyword_search(collection.keyword, q, keyword=settings.keyword, top_k=TOP_K, synonyms=lookup,
                              max_synonyms=settings.synonyms.max_per_word)

    async def precomputed(_s: Settings, q: str, models: Sequence[str]) -> QueryEmbeddings:
        return QueryEmbeddings(vectors={m: vectors[q] for m in models})

    async def whole(q: str) -> Any:
        retriever = HybridRetriever(settings, [collection], lexicon=workspace.lexicon, embed=precomputed)
        nodes = await retriever.aretrieve(q)
        for step in postprocessors(settings.retrieve):
            nodes = step.postprocess_nodes(nodes, query_str=q)
        return retriever.meta

    t, c = time.perf_counter(), time.process_time()
    collection = workspace.collection(name)     # the first query after opening: both legs, the product's path
    first = asyncio.run(whole(queries[0])).collections[name]
    first_s = (time.perf_counter() - t, time.process_time() - c)

    times: dict[str, list[float]] = {k: [] for k in (
        "keyword", "keyword_cpu", "tier1", "tier1_cpu", "tier2", "tier2_cpu", "vector", "vector_cpu",
        "whole", "whole_cpu", "fts5_disk_tier1", "fts5_disk_tier1_cpu", "fts5_disk_tier2", "fts5_disk_tier2_cpu")}
    plans: list[tuple[int, list[str]]] = []

    def timed(key: str, cpu: float, wall: float) -> None:
        times[key].append((time.perf_counter() - wall) * 1000)
        times[key + "_cpu"].append((time.process_time() - cpu) * 1000)

    async def run_all() -> None:
        for q in queries:
            cpu, wall = time.process_time(), time.perf_counter()
            result = leg(q)
            timed("keyword", cpu, wall)
            if result.meta.tier in (1, 2):
                tier = int(result.meta.tier)
                timed(f"tier{tier}", cpu, wall)
                plans.append((tier, [w for w in result.meta.kept if collection.keyword.analyze(w)]))
                cpu, wall = time.process_time(), time.perf_counter()
                fts5_query(on_disk, *plans[-1], "rowid, text")
                timed(f"fts5_disk_tier{tier}", cpu, wall)
            cpu, wall = time.process_time(), time.perf_counter()
            collection.vectors(model).query(vectors[q], TOP_K)
            timed("vector", cpu, wall)
            cpu, wall = time.process_time(), time.perf_counter()
            await whole(q)
            timed("whole", cpu, wall)

    asyncio.run(run_all())
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    fts = fts5(collection, plans) if memory_fts5 else {}
    segments = len(collection.keyword.cached_segments())   # the queries' generation: every segment
    workspace.close()
    return {"synonyms": lookup is not None, "imports_s": imports[0], "imports_cpu_s": imports[1],
            "first_query_s": first_s[0],
            "first_query_cpu_s": first_s[1], "first_tier": first.keyword.tier,
            "rss_mb": rss_mb, "queries": len(queries), "segments": segments,
            **{k: summary(v) for k, v in times.items()}, **fts}


def fts5_file(settings: Settings, name: str) -> str:
    return str(settings.data_dir / f"fts5-{name}.sqlite3")


def fts5_on_disk(settings: Settings, name: str) -> None:
    """The FTS5 file of the collection in the data dir, built once, in its own process (`--fts5-file`), so the
    texts it reads never count in a query process's RSS."""
    if not Path(fts5_file(settings, name)).exists():
        subprocess.run([sys.executable, "-m", "benchmarks.keyword_scale", "--fts5-file", name, "--data-dir",
                        str(settings.data_dir)], check=True, cwd=ROOT)


def build_fts5_file(settings: Settings, name: str) -> None:
    from ragtui.library import CollectionRegistry

    path = Path(fts5_file(settings, name))
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    collection = CollectionRegistry(settings).open(name)
    db = sqlite3.connect(tmp)
    fts5_fill(db, collection)
    db.close()
    collection.close()
    tmp.rename(path)


def fts5_fill(db: sqlite3.Connection, collection: Any) -> int:
    """The collection's chunk texts into a new FTS5 (porter) table `chunks` of `db`; returns the row count."""
    db.execute("CREATE VIRTUAL TABLE chunks USING fts5(text, tokenize='porter unicode61')")
    texts = collection.records.done_texts(sorted(collection.keyword.ids()))
    db.executemany("INSERT INTO chunks(text) VALUES (?)", ((text,) for text in texts.values()))
    db.commit()
    return len(texts)


def fts5_query(db: sqlite3.Connection, tier: int, words: list[str], columns: str) -> None:
    match = (" AND " if tier == 1 else " OR ").join(f'"{w}"' for w in words)
    db.execute(f"SELECT {columns}, bm25(chunks) FROM chunks WHERE chunks MATCH ? ORDER BY bm25(chunks) LIMIT ?",
               (match, TOP_K)).fetchall()


def fts5(collection: Any, plans: list[tuple[int, list[str]]]) -> dict[str, Any]:
    """The same chunks and kept words in an in-memory SQLite FTS5 (porter), in this process: build time, p50/p95
    per tier.

    Each query runs twice: returning the chunks' text with the rank (`fts5_tier*`: the work our leg does,
    which returns chunks) and returning row ids only (`fts5_ids_tier*`). (`fts5_disk_tier*`, timed beside
    each query of our leg, is the same with text from an FTS5 file in the data dir: on disk, as our index is.)
    """
    db = sqlite3.connect(":memory:")
    t = time.perf_counter()
    rows = fts5_fill(db, collection)
    built = time.perf_counter() - t
    times: dict[str, list[float]] = {f"fts5{kind}_tier{tier}{clock}": [] for kind in ("", "_ids") for tier in (1, 2)
                                     for clock in ("", "_cpu")}
    for tier, words in plans:
        for kind, columns in (("", "rowid, text"), ("_ids", "rowid")):
            wall, cpu = time.perf_counter(), time.process_time()
            fts5_query(db, tier, words, columns)
            times[f"fts5{kind}_tier{tier}"].append((time.perf_counter() - wall) * 1000)
            times[f"fts5{kind}_tier{tier}_cpu"].append((time.process_time() - cpu) * 1000)
    return {"fts5_build_s": built, "fts5_rows": rows, **{k: summary(v) for k, v in times.items()}}


def summary(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50": round(statistics.median(values), 3) if values else float("nan"),
            "p95": round(pct(values, 95), 3)}


# --- driver -------------------------------------------------------------------------------------

def table(size: int, built: dict[str, Any] | None, m: dict[str, Any]) -> str:
    def cell(key: str) -> str:
        return f"{m[key]['p50']:.2f} / {m[key]['p95']:.2f}"

    def ratio(ours: str, theirs: str) -> str:
        return f"{m[theirs]['p50'] / m[ours]['p50']:.1f}x" if m[ours]["n"] and m[theirs]["n"] else "-"

    rows = [f"### {size:,} chunks", "",
            "| measure | p50 / p95 ms (wall) | p50 / p95 ms (CPU) | n |", "|---|---|---|---|"]
    for label, key in (("keyword leg, all queries", "keyword"), ("keyword leg, AND tier sufficed", "tier1"),
                       ("keyword leg, OR tier", "tier2"), ("FTS5, AND of the kept words, with text", "fts5_tier1"),
                       ("FTS5, OR of the kept words, with text", "fts5_tier2"),
                       ("FTS5, AND of the kept words, row ids only", "fts5_ids_tier1"),
                       ("FTS5, OR of the kept words, row ids only", "fts5_ids_tier2"),
                       ("FTS5 on disk, AND of the kept words, with text", "fts5_disk_tier1"),
                       ("FTS5 on disk, OR of the kept words, with text", "fts5_disk_tier2"),
                       ("vector leg (Chroma)", "vector"),
                       ("whole retrieval, embedding excluded", "whole")):
        rows.append(f"| {label} | {cell(key)} | {cell(key + '_cpu')} | {m[key]['n']} |")
    rows += ["", f"FTS5 p50 / ours p50 (CPU), on disk with text / in memory with text / in memory, row ids only: "
                 f"AND tier {ratio('tier1_cpu', 'fts5_disk_tier1_cpu')} / {ratio('tier1_cpu', 'fts5_tier1_cpu')} / "
                 f"{ratio('tier1_cpu', 'fts5_ids_tier1_cpu')}, OR tier {ratio('tier2_cpu', 'fts5_disk_tier2_cpu')} / "
                 f"{ratio('tier2_cpu', 'fts5_tier2_cpu')} / {ratio('tier2_cpu', 'fts5_ids_tier2_cpu')}; "
                 f"first query after opening (whole retrieval) "
                 f"{m['first_query_s']:.2f} s wall / {m['first_query_cpu_s']:.2f} s CPU, after the engine's imports "
                 f"({m['imports_s']:.2f} s / {m['imports_cpu_s']:.2f} s CPU); query process peak "
                 f"RSS {m['rss_mb']:.0f} MiB; {m['segments']} Whoosh segment(s); FTS5 build {m['fts5_build_s']:.1f} s; "
                 + ("synonyms on (WordNet)" if m["synonyms"] else "**synonyms off: no WordNet in the data dir "
                    "(--wordnet FILE)**")]
    if built:
        b = built["build"]
        rows.append(f"build without embeddings: {b['wall_s']:.0f} s wall / {b['cpu_s']:.0f} s CPU for "
                    f"{built['chunks']:,} chunks ({built['chunks'] / b['wall_s']:.0f} chunks/s); "
                    f"{built['batches']} keyword batches, s per 1,000 chunks: first "
                    f"{built['first_batch_s_per_1k']:.2f}, last {built['last_batch_s_per_1k']:.2f}, max "
                    f"{built['max_batch_s_per_1k']:.2f}; CPU s per 1,000 chunks: first "
                    f"{built['first_batch_cpu_s_per_1k']:.2f}, last {built['last_batch_cpu_s_per_1k']:.2f}, max "
                    f"{built['max_batch_cpu_s_per_1k']:.2f}; closing merge {built['merge_s']:.1f} s "
                    f"({built['merge_cpu_s']:.1f} s CPU); stages "
                    + ", ".join(f"{k} {v:.0f} s" for k, v in built["stages_s"].items())
                    + f"; embedding pass (stand-in + Chroma) {built['embed_pass_s']:.0f} s")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, nargs="+", default=[10_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "ragtui-keyword-scale")
    parser.add_argument("--eval-data", type=Path, default=ROOT.parent / "shared" / "data" / "eval")
    parser.add_argument("--wordnet", type=Path, metavar="FILE",
                        help="a WN-LMF file (e.g. oewn-2024.xml.gz) installed into the data dir when it has no "
                             "WordNet yet: without one the keyword leg runs without synonyms, unlike the product")
    parser.add_argument("--build-only", action="store_true",
                        help="build without embeddings, print the build's JSON, stop (no embedding pass or queries)")
    parser.add_argument("--measure", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--no-memory-fts5", action="store_true",
                        help="with --measure: no in-memory FTS5 copy (at 1M chunks it outgrows the machine's memory)")
    parser.add_argument("--fts5-file", metavar="NAME", help=argparse.SUPPRESS)
    args = parser.parse_args()
    settings = settings_for(args.data_dir)
    if args.wordnet and not args.measure:
        from ragtui.retrieve.wordnet import install, installed

        if not installed(settings.synonyms.lexicon, args.data_dir):
            install(settings.synonyms.lexicon, args.data_dir, args.wordnet)
    queries = questions(args.eval_data, args.queries)
    if args.fts5_file:
        build_fts5_file(settings, args.fts5_file)
        return 0
    if args.measure:
        fts5_on_disk(settings, args.measure)
        print(json.dumps(measure(settings, args.measure, queries, memory_fts5=not args.no_memory_fts5)))
        return 0
    from ragtui.library import CollectionRegistry

    out: dict[str, Any] = {}
    for size in args.chunks:
        name = f"scale-{size}"
        built = None
        if not CollectionRegistry(settings).exists(name):
            built = build(settings, name, size, args.eval_data, embed=not args.build_only)
            print(json.dumps({"built": built}), file=sys.stderr, flush=True)
        if args.build_only:
            continue
        proc = subprocess.run([sys.executable, "-m", "benchmarks.keyword_scale", "--measure", name,
                               "--queries", str(args.queries), "--data-dir", str(args.data_dir),
                               "--eval-data", str(args.eval_data)],
                              capture_output=True, text=True, check=True, cwd=ROOT)
        measured = json.loads(proc.stdout.splitlines()[-1])
        proc = subprocess.run([sys.executable, "-m", "benchmarks.query_profile", "--collection", name,
                               "--queries", str(args.queries), "--data-dir", str(args.data_dir),
                               "--eval-data", str(args.eval_data)],
                              capture_output=True, text=True, check=True, cwd=ROOT)
        *profile_table, profile_json = proc.stdout.splitlines()
        out[name] = {"build": built, "query": measured, "profile": json.loads(profile_json)}
        print(table(size, built, measured), "", "Query process, step by step:", "", *profile_table,
              sep="\n", flush=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
