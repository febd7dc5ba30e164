"""Fusion across collections when one has no vectors: a BEIR dev set split in two collections, one keyword-only.

    python -m benchmarks.split_fusion --dataset ../shared/data/eval/cranfield --out SPLIT.json [--limit N]
    ragtui eval --compare-runs BEFORE.json AFTER.json      # paired differences, per subset of queries

The corpus is split in two halves by a hash of each document id. Half V is
ingested with the embedder of the configuration ([ollama], [embed]); half K
through an ingest that cannot reach any embedder (a dead address), so it has no
vectors, as a collection still embedding or ingested during an outage; half K is
also ingested with vectors, for the reference. Every judged query then runs over
V and K together (both legs at `ragtui eval`'s depth of 100 chunks, query vectors
computed once, synonyms as configured), and the pooled fused ranking is scored at
document level exactly as `ragtui eval` scores one collection. Modes in the
report (per-query scores in the shape `ragtui eval --compare-runs` reads):

- `split`: every judged query, V with K keyword-only;
- `split:relevant-in-K` / `split:relevant-in-V`: the queries whose relevant
  documents all lie in K (or all in V);
- `embedded`, `embedded:relevant-in-K`, `embedded:relevant-in-V`: the same with
  K's vectors (the ranking the keyword-only half would have with its vectors).

The collections are kept under `--data-dir` and reused (by a later run of this
script on another tree, so before and after see the same indexes).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def half(doc_id: str) -> str:
    """'K' or 'V', by a hash of the document id (stable across runs and machines)."""
    return "K" if hashlib.sha256(doc_id.encode()).digest()[0] % 2 else "V"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="the report (JSON, with per-query scores)")
    parser.add_argument("--limit", type=int, default=None, help="the first N judged queries (qrels order)")
    parser.add_argument("--config", type=Path, default=None, help="ragtui config file (the embedder, fusion)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="setting overrides")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="where the split collections are kept (default: <data dir>/eval/split)")
    args = parser.parse_args()

    from ragtui.config import load_settings
    from ragtui.evaluation.beir import load_dataset

    settings = load_settings(user_file=args.config, overrides=[*args.set, "embed.contextual_prefix=false"])
    dataset = load_dataset(args.dataset).limited(args.limit)
    root = args.data_dir or settings.data_dir / "eval" / "split"
    started, cpu0 = time.perf_counter(), _cpu_s()
    report = asyncio.run(_run(settings, dataset, root))
    report["timings_s"]["wall"] = round(time.perf_counter() - started, 1)
    report["timings_s"]["cpu"] = round(_cpu_s() - cpu0, 1)
    args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    for mode, metrics in report["results"].items():
        print(f"{mode:26} n={report['queries'][mode]:5}  nDCG@10 {metrics['ndcg@10']['mean']:.3f}  "
              f"MRR@10 {metrics['mrr@10']['mean']:.3f}  R@10 {metrics['recall@10']['mean']:.3f}", flush=True)
    print(f"wall {report['timings_s']['wall']} s, CPU {report['timings_s']['cpu']} s", file=sys.stderr)
    return 0


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _run(settings: Any, dataset: Any, root: Path) -> dict[str, Any]:
    from ragtui.evaluation.beir import Dataset
    from ragtui.evaluation.metrics import score_runs, summarise_scores
    from ragtui.evaluation.runner import EVAL_TOP_K, doc_ranking, embed_queries, ingest_corpus
    from ragtui.retrieve.hybrid_retriever import HybridRetriever, QueryEmbeddings
    from ragtui.workspace import Workspace

    base = "split-" + "".join(ch for ch in dataset.name if ch.isalnum()).lower()
    halves = {h: Dataset(dataset.name, {i: d for i, d in dataset.corpus.items() if half(i) == h}, {}, {})
              for h in "KV"}
    unreachable = settings.replace(ollama__host="http://127.0.0.1:9", embed__retries=1,
                                   embed__provider="ollama")
    timings: dict[str, float] = {}
    for name, part, ingest_settings in ((f"{base}-v", halves["V"], settings),
                                        (f"{base}-k-embedded", halves["K"], settings),
                                        (f"{base}-k-keyword-only", halves["K"], unreachable)):
        async with Workspace(ingest_settings, collections_root=root) as workspace:
            if not workspace.registry.exists(name):
                t = time.perf_counter()
                await ingest_corpus(workspace, name, part, lambda m, n=name: print(f"{n}: {m}", file=sys.stderr))
                timings[f"ingest {name}"] = round(time.perf_counter() - t, 1)
    cached = await embed_queries(settings, list(dataset.queries.values()))

    async def precomputed(_: Any, query: str, models: Sequence[str]) -> QueryEmbeddings:
        return QueryEmbeddings(vectors={m: cached[m][query.lower()] for m in models})

    where: dict[str, str] = {}
    for qid, judged in dataset.qrels.items():
        sides = {half(doc) for doc, grade in judged.items() if grade > 0}
        where[qid] = sides.pop() if len(sides) == 1 else "both"
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    gate = asyncio.Semaphore(4)
    async with Workspace(settings, collections_root=root) as workspace:
        for mode, k_name in (("split", f"{base}-k-keyword-only"), ("embedded", f"{base}-k-embedded")):
            collections = [workspace.collection(f"{base}-v"), workspace.collection(k_name)]

            async def one(query: str, collections: list[Any] = collections) -> list[str]:
                async with gate:
                    retriever = HybridRetriever(settings, collections, lexicon=workspace.lexicon,
                                                top_k=EVAL_TOP_K, embed=precomputed)
                    return doc_ranking(n.node.metadata["source"] for n in await retriever.aretrieve(query))

            t = time.perf_counter()
            qids = list(dataset.queries)
            rankings = await asyncio.gather(*(one(dataset.queries[q]) for q in qids))
            timings[f"retrieve {mode}"] = round(time.perf_counter() - t, 1)
            scores = score_runs(dict(zip(qids, rankings, strict=True)), dataset.qrels)
            per_query[mode] = scores
            for side in "KV":
                per_query[f"{mode}:relevant-in-{side}"] = {q: s for q, s in scores.items() if where.get(q) == side}
    return {"dataset": dataset.name, "documents": {h: len(halves[h].corpus) for h in "KV"},
            "fusion": settings.retrieve.fusion, "rrf_k": settings.retrieve.rrf_k, "models": settings.embed.all_models,
            "tree": os.getcwd(), "queries": {m: len(s) for m, s in per_query.items()},
            "results": {m: summarise_scores(s) for m, s in per_query.items() if s},
            "per_query": per_query, "timings_s": timings}


if __name__ == "__main__":
    raise SystemExit(main())
