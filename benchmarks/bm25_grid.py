"""Keyword-leg nDCG@10 on a BEIR dev set for several BM25 (k1, b): ingest once, then query per setting.

    python -m benchmarks.bm25_grid --dataset ../shared/data/eval/cranfield --grid 1.2,0.75 1.0,0.9 [--limit N]

What `ragtui eval --modes keyword` does (the same ingest, retriever, depth and
metrics), without re-ingesting for every setting: the corpus goes through the
real ingest once (the tests' fake Ollama answers the embedding calls, which
keyword mode does not use), then each (k1, b) reopens the collection with
`keyword.bm25_k1` / `keyword.bm25_b` set and runs every judged query. Synonyms follow
the configuration (OEWN installed in the data dir: on). Prints one line per
setting.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from ragtui.config import load_settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--grid", nargs="+", required=True, metavar="K1,B")
    parser.add_argument("--limit", type=int, default=None, help="the first N judged queries (qrels order)")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "ragtui-bm25-grid",
                        help="where the throwaway collection goes (install WordNet here for synonyms)")
    args = parser.parse_args()
    grid = [tuple(float(x) for x in pair.split(",")) for pair in args.grid]

    from ragtui.evaluation.beir import load_dataset
    from ragtui.evaluation.metrics import score_runs, summarise_scores
    from ragtui.evaluation.runner import EVAL_TOP_K, doc_ranking, ingest_corpus
    from ragtui.library import CollectionRegistry
    from ragtui.retrieve.hybrid_retriever import HybridRetriever
    from ragtui.workspace import Workspace
    from tests.fake_ollama import FakeOllama

    fake = FakeOllama().start()
    settings = load_settings(user_file=args.data_dir / "none.toml", env={}, overrides=[
        f"storage.data_dir={args.data_dir}", f"ollama.host={fake.url}", "embed.contextual_prefix=false"])
    dataset = load_dataset(args.dataset).limited(args.limit)
    name = "grid-" + "".join(ch for ch in args.dataset.name if ch.isalnum())

    async def run() -> None:
        async with Workspace(settings) as workspace:
            if workspace.registry.exists(name):
                workspace.delete_collection(name)
            await ingest_corpus(workspace, name, dataset, lambda _: None)
            await grid_search(workspace.lexicon)
            workspace.delete_collection(name)

    async def grid_search(lexicon: Any) -> None:
        for k1, b in grid:
            tuned = settings.replace(keyword__bm25_k1=k1, keyword__bm25_b=b)
            collection = CollectionRegistry(tuned).open(name)
            began = time.perf_counter()
            runs = {}
            for qid, text in dataset.queries.items():
                retriever = HybridRetriever(tuned, [collection], lexicon=lexicon, mode="keyword", top_k=EVAL_TOP_K)
                runs[qid] = doc_ranking(n.node.metadata["source"] for n in await retriever.aretrieve(text))
            result = summarise_scores(score_runs(runs, dataset.qrels))
            print(f"k1={k1} b={b}: nDCG@10 {result['ndcg@10']['mean']:.4f}  MAP {result['map']['mean']:.4f}  "
                  f"({len(runs)} queries, {time.perf_counter() - began:.1f} s)", flush=True)
            collection.close()

    try:
        asyncio.run(run())
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
