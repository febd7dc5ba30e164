"""`ragtui eval`: ingest a BEIR corpus into a throwaway collection, run every judged query per mode, score.

Choices that keep doc-level metrics honest:
- the corpus goes through the real ingest (`ingest_documents`: chunking, entropy
  filter, embedding, both stores), one document per corpus entry, title
  prefixed to the text, without the contextual "path >" embedding prefix (the
  paths are bare ids); the document id is the chunk's `source`, so a
  document's score is its best chunk's (first occurrence in the fused ranking);
- every leg fetches EVAL_TOP_K = 100 chunks (the depth Recall@100 and MAP need,
  and the depth of the published baselines) instead of retrieve.top_k;
- the ranking scored is the fused one before the postprocessors (cap, dedupe, cuts):
  the per-file cap never removes a document's best chunk, relative
  normalisation keeps the order, and min_score /
  pre_annotate_keep / the 200-char dedupe would cut judged documents from the
  tail for reasons that are product choices, not retrieval quality;
- query vectors are computed once per model and shared by the modes, so the
  modes differ only in what they retrieve;
- with `keep_index`, the collection is named after what shapes it (dataset,
  chunking, entropy limits, and what decides the vectors: embedding provider,
  server and models) and kept, so a later run that varies only retrieval
  settings reuses it instead of embedding the corpus again; its query vectors
  are cached per provider, server and models too;
- eval collections, kept or throwaway, live in their own folder
  (`<data dir>/eval/collections`, EVAL_DIR), never among the user's, so a run
  killed mid-ingest leaves nothing that `query`, `ask` or `collections list`
  would search or show; the next run deletes what such a run left (a throwaway
  collection whose process is gone);
- every mode's per-query scores are kept, so two modes (or two saved runs) are
  compared by a paired bootstrap of their difference (`metrics.compare`).

With `sources` the run scores instead what a question would annotate: the
product's retrieval (`pipeline.retrieve` at `retrieve.top_k`, the similarity
floor, the per-file cap, dedupe, `pre_annotate_keep`, `annotate_max`), one
position per source, a document's second and later chunks counting as not
relevant (`source_ranking`). That is the view in which the per-file cap and the
cuts matter; R@100 there is the recall of the whole annotated set.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtui.config import Settings
from ragtui.evaluation.beir import Dataset
from ragtui.evaluation.metrics import FEW_QUERIES, compare, score_runs, summarise_scores
from ragtui.model.retrieval import Mode, StrategyMeta

if TYPE_CHECKING:
    from ragtui.library import Collection
    from ragtui.model.chunks import Chunk
    from ragtui.model.collection import IngestReport
    from ragtui.model.retrieval import Hit
    from ragtui.retrieve.hybrid_retriever import QueryEmbedder
    from ragtui.retrieve.wordnet import Lexicon
    from ragtui.workspace import Workspace

EVAL_TOP_K = 100
EVAL_DIR = "eval"               # under the data dir: a data dir of its own for eval collections
_THROWAWAY = re.compile(r"eval-(\d+)-\d+")   # eval-<pid>-<time>: one run's collection, deleted at its end
# name -> (retrieval mode, synonyms on)
EVAL_MODES: dict[str, tuple[Mode, bool]] = {
    "keyword": ("keyword", True),
    "vector": ("vector", False),
    "hybrid": ("hybrid", True),
    "hybrid-nosyn": ("hybrid", False),
}
Progress = Callable[[str], None]
COST_KEYS = ("llm_calls", "llm_s", "searches", "seconds")
# (query id, mode, synonyms on) -> the query's ranking of document ids, the retrieval's notices, its cost (COST_KEYS)
Ranker = Callable[[str, Mode, bool], Awaitable[tuple[list[str], list[str], dict[str, float]]]]


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
    per_query: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)   # mode -> query -> metric
    comparisons: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # "a vs b" -> metric -> diff
    costs: dict[str, dict[str, float]] = field(default_factory=dict)   # mode -> COST_KEYS -> mean per query


def query_cost(meta: StrategyMeta | None, seconds: float) -> dict[str, float]:
    """One query's cost: the strategies' model calls and seconds, its searches, and its wall seconds."""
    return {"llm_calls": meta.llm_calls if meta else 0, "llm_s": meta.llm_s if meta else 0.0,
            "searches": meta.searches if meta else 1, "seconds": seconds}


def index_name(settings: Settings, dataset: Dataset) -> str:
    """A kept eval collection's name: a hash of everything that shapes the index, so a stale one is never reused."""
    shape = {"dataset": dataset.name, "documents": len(dataset.corpus),
             "first": next(iter(dataset.corpus), ""), "chunk": vars(settings.chunk),
             "entropy": [settings.ingest.entropy_min, settings.ingest.entropy_max, settings.ingest.toc_ratio],
             "vectors": vector_source(settings), "prefix": settings.embed.contextual_prefix}
    return f"eval-{_digest(shape)}"


def vector_source(settings: Settings) -> dict[str, Any]:
    """What decides the vectors of a text: the embedding provider, the server that runs it and the models. Two
    servers may serve different models under one name (or one at another size), so the server is part of it."""
    from ragtui.embed_api import embed_url

    return {"provider": settings.embed.provider, "server": embed_url(settings).rstrip("/"),
            "models": settings.embed.all_models}


def query_vector_cache(settings: Settings) -> Path:
    """The file of the query vectors a kept index's runs computed, one per `vector_source`."""
    return settings.data_dir / EVAL_DIR / f"query-vectors-{_digest(vector_source(settings))}.json"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:12]


async def ingest_corpus(workspace: Workspace, name: str, dataset: Dataset, progress: Progress) -> IngestReport:
    """The corpus through the real ingest (chunk, entropy filter, embed, index), one document per entry."""
    from ragtui.events import IngestFinished, IngestProgress
    from ragtui.model.collection import IngestReport

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


async def embed_queries(settings: Settings, queries: Sequence[str],
                        cache: Path | None = None) -> dict[str, dict[str, list[float]]]:
    """model -> lowercased query -> vector, in batches (what the vector leg would compute per query).

    With `cache` (a JSON file, used with a kept index), vectors computed by an
    earlier run are read back and only new queries are embedded.
    """
    from ragtui.embed_api import embedding_client

    texts = list(dict.fromkeys(q.lower() for q in queries))
    out: dict[str, dict[str, list[float]]] = {}
    if cache is not None and cache.is_file():
        out = json.loads(cache.read_text(encoding="utf-8"))
    for model in settings.embed.all_models:
        known = out.setdefault(model, {})
        todo = [t for t in texts if t not in known]
        if todo:
            embedder = embedding_client(settings, model, workers=2)
            vectors = await embedder.aget_text_embedding_batch(todo)
            known.update(zip(todo, vectors, strict=True))
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(out), encoding="utf-8")
    return out


def precomputed(cached: Mapping[str, Mapping[str, list[float]]]) -> QueryEmbedder:
    """A query embedder that looks the vectors up in `embed_queries`' answer instead of asking the server."""
    from ragtui.retrieve.hybrid_retriever import QueryEmbeddings, embed_query

    async def embed(settings: Settings, query: str, models: Sequence[str]) -> QueryEmbeddings:
        known = {m: cached[m][query.lower()] for m in models if query.lower() in cached.get(m, {})}
        if len(known) == len(models):
            return QueryEmbeddings(vectors=known)
        return await embed_query(settings, query, models)     # a strategy's own text (a HyDE passage, a variant)

    return embed


def file_of(chunk: Chunk) -> str:
    """A BEIR corpus entry's id: the file a chunk came from (ingest names each entry's file by its id)."""
    return chunk.meta.source


def source_ranking(hits: Sequence[Hit], key: Callable[[Chunk], str] = file_of) -> list[str]:
    """One entry per source in order: its document id, or a never-judged id when the document came earlier."""
    seen: set[str] = set()
    ranking: list[str] = []
    for i, hit in enumerate(hits):
        doc = key(hit.chunk)
        ranking.append(doc if doc not in seen else f"\0repeat {i}")
        seen.add(doc)
    return ranking


def doc_ranking(sources: Iterable[str], depth: int = EVAL_TOP_K) -> list[str]:
    """Document ids (the sources of a ranking's chunks, best first) in order of their best chunk."""
    ranking: list[str] = []
    seen: set[str] = set()
    for doc in sources:
        if doc not in seen:
            seen.add(doc)
            ranking.append(doc)
            if len(ranking) == depth:
                break
    return ranking


async def run_eval(settings: Settings, dataset: Dataset, modes: Sequence[str], *,
                   progress: Progress = lambda _: None, concurrency: int = 4,
                   compare_pairs: Sequence[tuple[str, str]] = (), keep_index: bool = False,
                   sources: bool = False) -> EvalReport:
    """Ingest, retrieve every judged query in every mode, and score; the collection is deleted after
    (kept under `index_name` with `keep_index`, and reused when it already exists).

    The run has a workspace of its own: its settings differ (no contextual prefix),
    and its throwaway collection must not outlive it.
    """
    modes = modes_to_run(modes, compare_pairs)
    async with eval_index(settings, dataset, keep_index, progress) as index:
        report = await _evaluate(index, modes, progress, concurrency, keep_index, sources)
    add_comparisons(report, compare_pairs)
    return report


def modes_to_run(modes: Sequence[str], compare_pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The modes asked for and those the comparisons need, each once; ValueError naming an unknown one."""
    wanted = [*modes, *(m for pair in compare_pairs for m in pair)]
    unknown = [m for m in wanted if m not in EVAL_MODES]
    if unknown:
        raise ValueError(f"unknown eval mode {unknown[0]!r}; choose from {', '.join(EVAL_MODES)}")
    return list(dict.fromkeys(wanted))


def add_comparisons(report: EvalReport, compare_pairs: Sequence[tuple[str, str]]) -> None:
    """The paired bootstrap of B - A for each (A, B), from the report's per-query scores."""
    for a, b in compare_pairs:
        report.comparisons[f"{a} vs {b}"] = compare(report.per_query[a], report.per_query[b])


def eval_root(settings: Settings) -> Path:
    """The folder of eval collections: `--data-dir <data dir>/eval` reaches a kept index with `ragtui query`."""
    return settings.data_dir / EVAL_DIR / "collections"


def _delete_abandoned(workspace: Workspace) -> None:
    """Delete the throwaway collections of runs that were killed (their process is gone, no ingest holds them)."""
    for name in workspace.collection_names():
        match = _THROWAWAY.fullmatch(name)
        if match is None or _alive(int(match.group(1))):
            continue
        if not workspace.registry.open(name).ingest_running():
            workspace.delete_collection(name)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # someone else's process
        return True
    return True


@dataclass
class EvalIndex:
    """The dataset's corpus as an eval collection, in a workspace of its own (`eval_index`)."""

    workspace: Workspace
    name: str
    dataset: Dataset
    chunks: int
    notices: list[str]
    ingest_s: float


@asynccontextmanager
async def eval_index(settings: Settings, dataset: Dataset, keep: bool, progress: Progress) -> AsyncIterator[EvalIndex]:
    """The corpus ingested (or a kept index with the same shape reused) into an eval collection, deleted at the
    end unless `keep`. The workspace's settings differ from the user's (no contextual prefix), and its
    collections live under `eval_root`, never among the user's."""
    from ragtui.ingest.report import report_lines
    from ragtui.workspace import Workspace

    settings = settings.replace(embed__contextual_prefix=False)
    name = index_name(settings, dataset) if keep else f"eval-{os.getpid()}-{int(time.time())}"
    async with Workspace(settings, collections_root=eval_root(settings)) as workspace:
        _delete_abandoned(workspace)
        try:
            t = time.perf_counter()
            notices: list[str] = []
            if workspace.registry.exists(name):
                chunks = workspace.collection(name).info().chunks
                if settings.strategies.sentence_window and not workspace.collection(name).has_sentences:
                    # every document unchanged: the ingest only builds the sentence index
                    ingest = await ingest_corpus(workspace, name, dataset, progress)
                    notices += [f"reused the kept index {name} ({chunks} chunks) and built its sentence index",
                                *(f"ingest: {line}" for line in report_lines(ingest)[2:])]
                else:
                    notices.append(f"reused the kept index {name} ({chunks} chunks); ingest skipped")
            else:
                ingest = await ingest_corpus(workspace, name, dataset, progress)
                chunks = ingest.chunks_indexed
                notices += [f"ingest: {line}" for line in report_lines(ingest)[2:]]
            notices += few_queries(len(dataset.queries))
            yield EvalIndex(workspace, name, dataset, chunks, notices, round(time.perf_counter() - t, 1))
        finally:
            if not keep and workspace.registry.exists(name):
                workspace.delete_collection(name)


async def _evaluate(index: EvalIndex, modes: Sequence[str], progress: Progress,
                    concurrency: int, keep: bool, sources: bool) -> EvalReport:

    workspace, dataset, chunks = index.workspace, index.dataset, index.chunks
    settings = workspace.settings
    timings: dict[str, float] = {"ingest": index.ingest_s}
    notices = list(index.notices)
    collection = workspace.collection(index.name)
    t = time.perf_counter()
    cache = query_vector_cache(settings) if keep else None
    embed = precomputed(await embed_queries(settings, list(dataset.queries.values()), cache))
    timings["embed_queries"] = round(time.perf_counter() - t, 1)

    async def one(qid: str, mode: Mode, synonyms: bool) -> tuple[list[str], list[str], dict[str, float]]:
        return await ranked(settings, dataset.queries[qid], [collection], lexicon=workspace.lexicon, mode=mode,
                            synonyms=synonyms, sources=sources, embed=embed)

    results, per_query, costs = await score_modes(modes, dataset.qrels, one, progress=progress,
                                                  concurrency=concurrency, timings=timings, notices=notices)
    return EvalReport(
        dataset=dataset.name, queries=len(dataset.queries), documents=len(dataset.corpus),
        chunks=chunks, per_query=per_query, costs=costs,
        models=settings.embed.all_models, results=results, timings_s=timings, notices=notices,
        settings={"scored": "sources (what a question annotates)" if sources else "fused ranking, documents",
                  **retrieval_settings(settings, sources)})


def few_queries(count: int) -> list[str]:
    """The notice a run with too few queries to choose a setting by carries (none for enough)."""
    if count >= FEW_QUERIES:
        return []
    return [f"only {count} queries (fewer than {FEW_QUERIES}): the confidence intervals are too wide to choose "
            "a setting by"]


def retrieval_settings(settings: Settings, sources: bool) -> dict[str, Any]:
    """The settings that shape what an eval run retrieves, as its report states them."""
    return {"top_k_per_leg": settings.retrieve.top_k if sources else EVAL_TOP_K,
            "per_file_cap": settings.retrieve.per_file_cap,
            "max_chunks_per_file": settings.retrieve.max_chunks_per_file,
            "annotate_max": settings.retrieve.annotate_max, "fusion": settings.retrieve.fusion,
            "retrieve.keyword_weight": settings.retrieve.keyword_weight, "rrf_k": settings.retrieve.rrf_k,
            "synonyms.lexicon": settings.synonyms.lexicon,
            "synonyms.max_per_word": settings.synonyms.max_per_word,
            "ndcg_gain": "ndcg@10 linear (gain = grade, trec_eval/BEIR); ndcge@10 exponential (2^grade - 1)",
            "chunk.size_tokens": settings.chunk.size_tokens, "chunk.overlap_pct": settings.chunk.overlap_pct,
            "strategies": vars(settings.strategies), "llm.model": settings.llm.model,
            "min_token_overlap": settings.retrieve.min_token_overlap,
            "min_vector_score": settings.retrieve.min_vector_score}


async def ranked(settings: Settings, query: str, collections: Sequence[Collection], *, lexicon: Lexicon,
                 mode: Mode, synonyms: bool, sources: bool, embed: QueryEmbedder | None = None,
                 key: Callable[[Chunk], str] = file_of) -> tuple[list[str], list[str], dict[str, float]]:
    """One query's ranking of document ids (`key` of each chunk), its retrieval's notices and its cost, searched
    with the strategies that are on: with `sources` what the question would annotate (`source_ranking`), else
    the fused ranking, EVAL_TOP_K per leg."""
    from ragtui.model.retrieval import Retrieval
    from ragtui.research.strategies import search
    from ragtui.retrieve.hybrid_retriever import HybridRetriever
    from ragtui.retrieve.pipeline import retrieve, unprocessed_hits
    from ragtui.retrieve.sentence_window import sentence_run

    async def run(text: str, own: QueryEmbedder | None) -> Retrieval:
        if sources:
            return await retrieve(settings, text, collections, lexicon=lexicon, mode=mode, synonyms=synonyms,
                                  embed=own or embed)
        retriever = HybridRetriever(settings, collections, lexicon=lexicon, mode=mode, synonyms=synonyms,
                                    top_k=EVAL_TOP_K, embed=own or embed)
        nodes = await retriever.aretrieve(text)
        return Retrieval(text, unprocessed_hits(retriever, nodes), retriever.meta, notices=retriever.notices)

    started = time.perf_counter()
    sentences = sentence_run(settings, collections, mode=mode,
                             top_k=settings.retrieve.top_k if sources else EVAL_TOP_K)
    found = await search(settings, query, run, most=settings.retrieve.annotate_max if sources else 10_000,
                         embed=embed, vectors=mode != "keyword", sentences=sentences)
    cost = query_cost(found.meta.strategies, time.perf_counter() - started)
    ranking = source_ranking(found.hits, key) if sources else doc_ranking(key(h.chunk) for h in found.hits)
    return ranking, found.notices, cost


async def score_modes(modes: Sequence[str], qrels: Mapping[str, Mapping[str, int]], rank: Ranker, *,
                      progress: Progress, concurrency: int, timings: dict[str, float],
                      notices: list[str]) -> tuple[dict[str, dict[str, dict[str, float]]],
                                                   dict[str, dict[str, dict[str, float]]],
                                                   dict[str, dict[str, float]]]:
    """Every judged query ranked by `rank` in each mode (`concurrency` at a time) and scored against `qrels`:
    (mode -> metric -> mean and CI, mode -> query -> metric, mode -> COST_KEYS -> mean per query). Each mode's
    time goes into `timings`, the retrievals' notices (each once) into `notices`."""
    gate = asyncio.Semaphore(concurrency)

    async def gated(qid: str, mode: Mode, synonyms: bool) -> tuple[list[str], list[str], dict[str, float]]:
        async with gate:
            return await rank(qid, mode, synonyms)

    results: dict[str, dict[str, dict[str, float]]] = {}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    costs: dict[str, dict[str, float]] = {}
    qids = list(qrels)
    for mode_name in modes:
        mode, synonyms = EVAL_MODES[mode_name]
        t = time.perf_counter()
        answers = await asyncio.gather(*(gated(q, mode, synonyms) for q in qids))
        timings[f"retrieve:{mode_name}"] = round(time.perf_counter() - t, 1)
        for _, query_notices, _ in answers:
            notices.extend(n for n in query_notices if n not in notices)
        runs = {q: ranking for q, (ranking, _, _) in zip(qids, answers, strict=True)}
        costs[mode_name] = {key: round(sum(c[key] for _, _, c in answers) / max(len(answers), 1), 3)
                            for key in COST_KEYS}
        per_query[mode_name] = score_runs(runs, qrels)
        results[mode_name] = summarise_scores(per_query[mode_name])
        progress(f"{mode_name}: nDCG@10 {results[mode_name]['ndcg@10']['mean']:.3f}")
    return results, per_query, costs
