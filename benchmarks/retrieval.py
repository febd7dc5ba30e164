"""Query latency of the retrieval legs on large synthetic collections (spec §13).

    .venv/bin/python -m benchmarks.retrieval --sizes 10000 30000 [--queries 200] [--data-dir DIR]

Builds one collection per size through the stores (Whoosh + embedded Chroma),
from sentences of the SQuAD and Cranfield corpora re-mixed into ~1,550-char
chunks (perf-baselines.md), with hashed bag-of-words vectors (384 dims) made
in-process: the embedding call is excluded from every figure, as the target
says. Queries are SQuAD questions. Reported, warm, one query at a time:
keyword leg alone (plan + AND/OR tiers; synonyms on when the lexicon is
installed), vector leg alone (Chroma top-k), and the whole retrieval (both
legs, merge, postprocessors) with the query vector precomputed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ragtui.config import load_settings
from ragtui.model import Chunk, ChunkMeta, chunk_id

ROOT = Path(__file__).resolve().parent.parent

EVAL = ROOT.parent / "shared" / "data" / "eval"
DIM = 384
WORD = re.compile(r"[a-z0-9]+")


def hashed(text: str) -> list[float]:
    vec = [0.0] * DIM
    for w in WORD.findall(text.lower()):
        h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
        vec[h % DIM] += 1.0 if (h >> 40) & 1 else -1.0
    norm = sum(x * x for x in vec) ** 0.5 or 1.0
    return [x / norm for x in vec]


def sentences() -> list[str]:
    out = []
    for name in ("squad-v1.1-dev", "cranfield"):
        for line in (EVAL / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            out.extend(s for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]) if len(s) > 20)
    return out


def make_chunks(n: int, pool: list[str], rng: random.Random) -> list[Chunk]:
    chunks = []
    for i in range(n):
        parts, size = [], 0
        while size < 1550:
            s = rng.choice(pool)
            parts.append(s)
            size += len(s) + 1
        text = " ".join(parts)
        source = f"doc{i // 4:06d}.txt"
        meta = ChunkMeta(collection="bench", source=source, file_hash=source, format="txt", chunk_index=i % 4,
                         char_start=0, char_end=len(text), word_count=len(text.split()))
        chunks.append(Chunk(id=chunk_id(source, i % 4), text=text, meta=meta))
    return chunks


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def build(settings, name: str, n: int, pool: list[str]):
    from ragtui.library import CollectionRegistry

    registry = CollectionRegistry(settings)
    if registry.exists(name):
        return registry.open(name), 0.0
    collection = registry.create(name)
    rng = random.Random(n)
    t = time.perf_counter()
    step = 5000
    for start in range(0, n, step):
        batch = make_chunks(min(step, n - start), pool, rng)
        batch = [Chunk(id=f"{c.id}-{start}", text=c.text, meta=c.meta) for c in batch]
        collection.keyword.replace_sources([], batch)     # ids made unique per batch: plain adds
        collection.vectors(settings.embed.model).add(batch, [hashed(c.text) for c in batch])
        print(f"  {name}: {start + len(batch)}/{n} chunks, {time.perf_counter() - t:.0f} s", file=sys.stderr)
    collection.update_manifest(models=[settings.embed.model], state="ready")
    return collection, time.perf_counter() - t


async def measure(settings, collection, queries: list[str]) -> dict[str, list[float]]:
    from ragtui.retrieve.hybrid_retriever import HybridRetriever, QueryEmbeddings
    from ragtui.retrieve.keyword_leg import keyword_search
    from ragtui.retrieve.postprocess import postprocessors
    from ragtui.retrieve.wordnet import synonym_lookup

    model = settings.embed.model
    lookup = synonym_lookup(settings.synonyms.lexicon, settings.data_dir)
    vectors = {q: hashed(q.lower()) for q in queries}

    async def precomputed(_s, q, models):
        return QueryEmbeddings(vectors={m: vectors[q] for m in models})

    times: dict[str, list[float]] = {"keyword": [], "vector": [], "total": [], "tier1": [], "tier2": []}
    for warm in (True, False):
        for q in queries:
            t = time.perf_counter()
            leg = keyword_search(collection.keyword, q, keyword=settings.keyword, top_k=settings.retrieve.top_k,
                                 synonyms=lookup, max_synonyms=settings.synonyms.max_per_word)
            t1 = time.perf_counter()
            collection.vectors(model).query(vectors[q], settings.retrieve.top_k)
            t2 = time.perf_counter()
            retriever = HybridRetriever(settings, [collection], embed=precomputed)
            nodes = await retriever.aretrieve(q)
            for step in postprocessors(settings.retrieve):
                nodes = step.postprocess_nodes(nodes)
            t3 = time.perf_counter()
            if not warm:
                times["keyword"].append((t1 - t) * 1000)
                if leg.meta.tier in (1, 2):
                    times[f"tier{leg.meta.tier}"].append((t1 - t) * 1000)
                times["vector"].append((t2 - t1) * 1000)
                times["total"].append((t3 - t2) * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "ragtui-bench")
    args = parser.parse_args()
    settings = load_settings(overrides=[f"storage.data_dir={args.data_dir}", "embed.model=hash-384"])
    pool = sentences()
    questions = [json.loads(line)["text"] for line in
                 (EVAL / "squad-v1.1-dev" / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = random.Random(7).sample(questions, args.queries)
    print("| chunks | build s | keyword p50/p95 ms | vector p50/p95 ms | total p50/p95 ms "
          "| keyword, AND tier only: n, p50 ms | keyword, OR tier: n, p50 ms |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        collection, built = build(settings, f"bench-{n}", n, pool)
        times = asyncio.run(measure(settings, collection, queries))
        cells = [f"{statistics.median(times[k]):.1f} / {pct(times[k], 95):.1f}" for k in ("keyword", "vector", "total")]
        cells += [f"{len(times[k])}, {statistics.median(times[k]):.1f}" if times[k] else "0"
                  for k in ("tier1", "tier2")]
        print(f"| {n:,} | {built:.0f} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
