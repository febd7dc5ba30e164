"""`ragtui eval`: ingest a BEIR corpus into a throwaway collection, run every judged query per mode, score.

Choices that keep doc-level metrics honest (spec §11):
- the corpus goes through the real ingest (`ingest_documents`: chunking, entropy
  filter, embedding, both stores), one document per corpus entry, title
  prefixed to the text, without the contextual "path >" embedding prefix (the
  paths are bare ids); the document id is the chunk's `source`, so a
  document's score is its best chunk's (first occurrence in the fused ranking);
- every leg fetches EVAL_TOP_K = 100 chunks (the depth Recall@100 and MAP need,
  and the depth of the published baselines) instead of retrieve.top_k;
- the ranking scored is the fused one before the RAGWeed 3e-3f postprocessors:
  the per-file cap only removes a document's 3rd and later chunks (never its
  best), relative normalisation keeps the order, and min_score /
  pre_annotate_keep / the 200-char dedupe would cut judged documents from the
  tail for reasons that are product choices, not retrieval quality;
- query vectors are computed once per model and shared by the modes, so the
  modes differ only in what they retrieve.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragtui.config import Settings
from ragtui.evaluation.beir import Dataset
from ragtui.evaluation.metrics import summarise
from ragtui.retrieve.result import Mode

if TYPE_CHECKING:
    from ragtui.ingest.report import IngestReport
    from ragtui.workspace import Workspace

EVAL_TOP_K = 100
# name -> (retrieval mode, synonyms on)
EVAL_MODES: dict[str, tuple[Mode, bool]] = {
    "keyword": ("keyword", True),
    "vector": ("vector", False),
    "hybrid": ("hybrid", True),
    "hybrid-nosyn": ("hybrid", False),
}
Progress = Callable[[str], None]


@dataclass
class EvalReport:
    dataset: str
    queries: int
    documents: int
    chunks: int
    models: list[str]
    results: dict[str, dict[str, dict[str, float]]]      # mode -> metric -> mean / ci_low / ci_high
    settings: dict[str, Any]
    timings_s: dict[str, float] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)


async def ingest_corpus(workspace: Workspace, name: str, dataset: Dataset, progress: Progress) -> IngestReport:
    """The corpus through the real ingest (chunk, entropy filter, embed, index), one document per entry."""
    from ragtui.events import IngestFinished, IngestProgress
    from ragtui.ingest.report import IngestReport

    report = IngestReport(name)
    last = 0.0
    documents = ((doc.id, doc.content) for doc in dataset.corpus.values())
    async for event in workspace.ingest_documents(name, documents):
        if isinstance(event, IngestProgress) and time.monotonic() - last > 5:
            last = time.monotonic()
            progress(f"ingest: {event.files_done}/{event.files_total} documents, {event.embedded} embedded")
        elif isinstance(event, IngestFinished):
            report = event.report
    return report


async def embed_queries(settings: Settings, queries: Sequence[str]) -> dict[str, dict[str, list[float]]]:
    """model -> lowercased query -> vector, in batches (what the vector leg would compute per query)."""
    from ragtui.ollama_api import ollama_embedding

    texts = list(dict.fromkeys(q.lower() for q in queries))
    out: dict[str, dict[str, list[float]]] = {}
    for model in settings.embed.all_models:
        embedder = ollama_embedding(settings, model, workers=2)
        vectors = await embedder.aget_text_embedding_batch(texts)
        out[model] = dict(zip(texts, vectors, strict=True))
    return out


def doc_ranking(nodes: Sequence[Any], depth: int = EVAL_TOP_K) -> list[str]:
    """Document ids in order of their best chunk."""
    ranking: list[str] = []
    seen: set[str] = set()
    for n in nodes:
        doc = n.node.metadata["source"]
        if doc not in seen:
            seen.add(doc)
            ranking.append(doc)
            if len(ranking) == depth:
                break
    return ranking


async def run_eval(settings: Settings, dataset: Dataset, modes: Sequence[str], *,
                   progress: Progress = lambda _: None, concurrency: int = 4) -> EvalReport:
    """Ingest, retrieve every judged query in every mode, and score; the collection is deleted after.

    The run has a workspace of its own: its settings differ (no contextual prefix),
    and its throwaway collection must not outlive it.
    """
    from ragtui.workspace import Workspace

    unknown = [m for m in modes if m not in EVAL_MODES]
    if unknown:
        raise ValueError(f"unknown eval mode {unknown[0]!r}; choose from {', '.join(EVAL_MODES)}")
    name = f"eval-{os.getpid()}-{int(time.time())}"
    async with Workspace(settings.replace(embed__contextual_prefix=False)) as workspace:
        try:
            return await _evaluate(workspace, name, dataset, modes, progress, concurrency)
        finally:
            if workspace.registry.exists(name):
                workspace.delete_collection(name)


async def _evaluate(workspace: Workspace, name: str, dataset: Dataset, modes: Sequence[str], progress: Progress,
                    concurrency: int) -> EvalReport:
    from ragtui.retrieve.retriever import HybridRetriever, QueryEmbeddings

    settings = workspace.settings
    timings: dict[str, float] = {}
    t = time.perf_counter()
    ingest = await ingest_corpus(workspace, name, dataset, progress)
    timings["ingest"] = round(time.perf_counter() - t, 1)
    collection = workspace.collection(name)
    notices = [f"ingest: {line}" for line in ingest.lines()[2:]]
    t = time.perf_counter()
    cached = await embed_queries(settings, list(dataset.queries.values()))
    timings["embed_queries"] = round(time.perf_counter() - t, 1)

    async def precomputed(_: Settings, query: str, models: Sequence[str]) -> QueryEmbeddings:
        return QueryEmbeddings(vectors={m: cached[m][query.lower()] for m in models})

    results: dict[str, dict[str, dict[str, float]]] = {}
    gate = asyncio.Semaphore(concurrency)

    async def one(query: str, mode: Mode, synonyms: bool) -> tuple[list[str], list[str]]:
        async with gate:
            retriever = HybridRetriever(settings, [collection], lexicon=workspace.lexicon, mode=mode,
                                        synonyms=synonyms, top_k=EVAL_TOP_K, embed=precomputed)
            nodes = await retriever.aretrieve(query)
            return doc_ranking(nodes), retriever.notices

    for mode_name in modes:
        mode, synonyms = EVAL_MODES[mode_name]
        t = time.perf_counter()
        qids = list(dataset.queries)
        answers = await asyncio.gather(*(one(dataset.queries[q], mode, synonyms) for q in qids))
        timings[f"retrieve:{mode_name}"] = round(time.perf_counter() - t, 1)
        for _, query_notices in answers:
            notices.extend(n for n in query_notices if n not in notices)
        runs = {q: ranking for q, (ranking, _) in zip(qids, answers, strict=True)}
        results[mode_name] = summarise(runs, dataset.qrels)
        progress(f"{mode_name}: nDCG@10 {results[mode_name]['ndcg@10']['mean']:.3f}")
    return EvalReport(
        dataset=dataset.name, queries=len(dataset.queries), documents=len(dataset.corpus),
        chunks=ingest.chunks_indexed,
        models=settings.embed.all_models, results=results, timings_s=timings, notices=notices,
        settings={"top_k_per_leg": EVAL_TOP_K, "fusion": settings.retrieve.fusion,
                  "fts.weight": settings.fts.weight, "rrf_k": settings.retrieve.rrf_k,
                  "synonyms.lexicon": settings.synonyms.lexicon,
                  "synonyms.max_per_word": settings.synonyms.max_per_word,
                  "ndcg_gain": "linear (gain = grade, trec_eval/BEIR)"})
