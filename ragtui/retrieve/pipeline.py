"""Hybrid retrieval over one or more opened collections: the research session's entry point.

    retrieval = await retrieve(settings, "toilet flushing", [collection], lexicon=lexicon)

The Workspace opens the collections and owns the lexicon; `Workspace.retrieve`
is the call by name. The legs run per collection in parallel and are merged by
`retrieve.fusion` (hybrid_retriever.py); the collections' results are pooled and the
postprocessors applied (postprocess.py: per-file cap, dedupe, relative score, cuts). Degraded modes are
stated, never silent: an unreachable embedder or a collection without vectors
answers keyword-only with a notice, and an empty result says so.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ragtui.config import Settings
from ragtui.model.chunks import Chunk, LegRank
from ragtui.model.filters import SearchFilter
from ragtui.model.retrieval import Hit, Mode, RerankMeta, Retrieval
from ragtui.retrieve.rerank import failure_notice

if TYPE_CHECKING:
    from llama_index.core.schema import NodeWithScore

    from ragtui.library import Collection
    from ragtui.retrieve.hybrid_retriever import HybridRetriever, QueryEmbedder, Scored
    from ragtui.retrieve.wordnet import Lexicon


async def retrieve(settings: Settings, query: str, collections: Sequence[Collection], *, lexicon: Lexicon,
                   mode: Mode = "hybrid", synonyms: bool | None = None,
                   embed: QueryEmbedder | None = None, search_filter: SearchFilter | None = None) -> Retrieval:
    """Ranked, capped, deduped, normalised hits for `query` over these collections.

    `mode`: "hybrid" (both legs), "vector" or "keyword". `synonyms` overrides
    synonyms.enabled for this query; `lexicon` supplies them. `embed` replaces the
    query embedding (evaluation passes precomputed vectors). `search_filter` keeps
    both legs to part of each collection (a path glob, a heading).
    """
    from ragtui.retrieve.hybrid_retriever import HybridRetriever
    from ragtui.retrieve.postprocess import FUSED_SCORE_KEY, postprocessors

    retriever = HybridRetriever(settings, collections, lexicon=lexicon, mode=mode, synonyms=synonyms, embed=embed,
                                search_filter=search_filter)
    nodes = await retriever.aretrieve(query)
    notices = list(dict.fromkeys(retriever.notices))
    floor = settings.retrieve.min_similarity
    weak = [n for n in nodes if not similar_enough(retriever.evidence[n.node.node_id], floor)]
    nodes = [n for n in nodes if similar_enough(retriever.evidence[n.node.node_id], floor)]
    nodes, below_floors = quality_floors(settings, query, nodes, retriever)
    rerank = None
    if settings.rerank.enabled and nodes:
        nodes, rerank = await _reranked(settings, query, nodes)
        if rerank.error:
            notices.append(failure_notice(rerank))
    t = time.perf_counter()
    counts = file_chunks(collections, nodes, notices) if settings.retrieve.per_file_cap == "passages" else None
    for step in postprocessors(settings.retrieve, file_chunks=counts):
        nodes = step.postprocess_nodes(nodes, query_str=query)
    postprocess_ms = round((time.perf_counter() - t) * 1000, 2)
    ranks = leg_ranks(retriever.evidence.values())
    reranked = rerank_ranks(rerank)
    hits = [_hit(n, retriever.evidence[n.node.node_id], FUSED_SCORE_KEY, ranks, rank, reranked.get(n.node.node_id))
            for rank, n in enumerate(nodes, start=1)]
    if settings.retrieve.neighbor_window:
        from ragtui.retrieve.neighbors import expand

        by_name = {c.name: c for c in collections}

        def fetch(name: str, ids: Sequence[str]) -> list[Chunk]:
            try:
                return by_name[name].records.chunks_by_id(ids)
            except Exception as exc:  # damaged or deleted since its legs ran: its hits stay, without neighbours
                notices.append(f"{by_name[name].unreadable(exc, store='records.sqlite3')}; "
                               "its passages are shown without their neighbours.")
                return []

        hits = expand(hits, settings.retrieve.neighbor_window, fetch, settings.retrieve.annotate_max)
    nothing = ""
    if not collections:
        notices.append("No collection selected: nothing to search.")
    elif not hits and below_floors:
        weaker = f", and {len(weak)} more below retrieve.min_similarity = {floor:g}" if weak else ""
        nothing = (f"Nothing relevant in {', '.join(c.name for c in collections)}: the {below_floors} passages "
                   f"found are all {below_the_floors(settings)}{weaker}.")
    elif not hits and weak:
        best = max(retriever.evidence[n.node.node_id].vector or 0.0 for n in weak)
        nothing = (f"Nothing relevant in {', '.join(c.name for c in collections)}: no keyword matched, and the "
                   f"{len(weak)} nearest passages are all below retrieve.min_similarity = {floor:g} "
                   f"(the best {best:.2f}).")
    elif not hits:
        nothing = _nothing_found(retriever, [c.name for c in collections])
    if nothing:
        notices.append(nothing)
    meta = replace(retriever.meta, postprocess_ms=postprocess_ms, returned=len(hits), rerank=rerank,
                   below_min_similarity=len(weak), below_floors=below_floors)
    return Retrieval(query=query, hits=hits, meta=meta, keyword_only=retriever.keyword_only, notices=notices,
                     vectors_unreachable=retriever.vectors_unreachable, nothing_found=nothing)


def unprocessed_hits(retriever: HybridRetriever, nodes: Sequence[NodeWithScore]) -> list[Hit]:
    """The fused ranking as hits, before any floor, cap or cut (what evaluation scores)."""
    from ragtui.retrieve.postprocess import FUSED_SCORE_KEY

    ranks = leg_ranks(retriever.evidence.values())
    return [_hit(n, retriever.evidence[n.node.node_id], FUSED_SCORE_KEY, ranks, rank, None)
            for rank, n in enumerate(nodes, start=1)]


def file_chunks(collections: Sequence[Collection], nodes: Sequence[NodeWithScore],
                notices: list[str]) -> dict[tuple[str, str], int]:
    """Chunks per (collection, source) of the files these nodes come from (the "passages" per-file cap); a
    collection whose records cannot be read (damaged, or deleted since its legs ran) counts none, said in
    `notices`."""
    sources: dict[str, set[str]] = {}
    for n in nodes:
        sources.setdefault(n.node.metadata["collection"], set()).add(n.node.metadata["source"])
    counts: dict[tuple[str, str], int] = {}
    for c in collections:
        if c.name not in sources:
            continue
        try:
            counts.update(((c.name, source), count)
                          for source, count in c.records.chunk_counts(sorted(sources[c.name])).items())
        except Exception as exc:  # a damaged file can make SQLite raise any of its errors
            notices.append(f"{c.unreadable(exc, store='records.sqlite3')}; at most "
                           "retrieve.max_per_file of its hits per file are kept.")
    return counts


def quality_floors(settings: Settings, query: str, nodes: list[NodeWithScore],
                   retriever: HybridRetriever) -> tuple[list[NodeWithScore], int]:
    """The nodes that pass retrieve.min_token_overlap and retrieve.min_vector_score, and how many did not (the
    step after retrieve.min_similarity and before any reranker)."""
    from ragtui.retrieve.floors import above_floors
    from ragtui.text import content_words

    overlap, vector = settings.retrieve.min_token_overlap, settings.retrieve.min_vector_score
    if overlap <= 0 and vector <= 0:
        return nodes, 0
    wanted = content_words([query])
    kept = [n for n in nodes if above_floors(wanted, n.node.get_content(), retriever.evidence[n.node.node_id].vector,
                                             min_overlap=overlap, min_vector=vector)]
    return kept, len(nodes) - len(kept)


def below_the_floors(settings: Settings) -> str:
    """Where `quality_floors` left what it dropped, in words."""
    return (f"below the quality floors (retrieve.min_token_overlap = {settings.retrieve.min_token_overlap:g}, "
            f"retrieve.min_vector_score = {settings.retrieve.min_vector_score:g})")


def similar_enough(scored: Scored, floor: float) -> bool:
    """The retrieve.min_similarity rule: a chunk the keyword leg found passes (that leg judges it: its IDF
    gate refuses uninformative queries and its hits hold a query word or synonym); a chunk only the vector
    leg found passes when its cosine similarity reaches the floor. A floor of 0 keeps everything."""
    return floor <= 0 or scored.keyword is not None or scored.vector is None or scored.vector >= floor


LegKey = tuple[str, str, str]     # (collection, chunk id, leg)


def leg_ranks(evidence: Iterable[Scored]) -> dict[LegKey, tuple[int, float]]:
    """Each chunk's rank (from 1) and score in each leg, within its collection, over everything the legs found."""
    by_leg: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for s in evidence:
        for leg, score in (("vector", s.vector), ("keyword", s.keyword)):
            if score is not None:
                by_leg.setdefault((s.collection, leg), []).append((score, s.chunk.id))
    out: dict[LegKey, tuple[int, float]] = {}
    for (collection, leg), scored in by_leg.items():
        for rank, (score, cid) in enumerate(sorted(scored, key=lambda item: -item[0]), start=1):
            out[(collection, cid, leg)] = (rank, score)
    return out


def rerank_ranks(meta: RerankMeta | None) -> dict[str, tuple[int, float]]:
    """node id -> (rank, score) by the reranker's relevance scores; empty when no reranker scored anything."""
    scores = meta.scores if meta is not None else {}
    ordered = sorted(scores.items(), key=lambda item: -item[1])
    return {nid: (rank, score) for rank, (nid, score) in enumerate(ordered, start=1)}


async def _reranked(settings: Settings, query: str,
                    nodes: list[NodeWithScore]) -> tuple[list[NodeWithScore], RerankMeta]:
    """The fused top `rerank.top_n` in the reranker's order, the rest after them; the fused order on failure.

    The reordered nodes take the fused scores in their old rank order (the best
    score goes to the reranker's first), so the relative scores, min_score and
    pre_annotate_keep cut the same share of the list as without a reranker; each
    node's own fused score is kept under FUSED_SCORE_KEY for its hit.
    """
    from ragtui.retrieve.postprocess import FUSED_SCORE_KEY
    from ragtui.retrieve.rerank import rerank_meta

    head = nodes[:settings.rerank.top_n]
    order, meta = await rerank_meta(settings.rerank, query, [n.node.node_id for n in head],
                                    [n.node.get_content() for n in head], settings.limits.max_reply_bytes)
    if order is None:
        return nodes, meta
    moved = [head[i] for i in order]
    for node, rank_score in zip(moved, [n.score for n in head], strict=True):
        node.node.metadata[FUSED_SCORE_KEY] = node.score or 0.0
        node.score = rank_score
    return moved + nodes[len(head):], meta


def _hit(node: NodeWithScore, scored: Scored, fused_key: str, ranks: dict[LegKey, tuple[int, float]],
         rank: int, reranked: tuple[int, float] | None) -> Hit:
    fused = float(node.node.metadata.get(fused_key, node.score or 0.0))
    evidence = [LegRank(leg, *ranks[(scored.collection, scored.chunk.id, leg)]) for leg in scored.legs]
    evidence.append(LegRank("fused", rank, fused))
    if reranked is not None:
        evidence.append(LegRank("rerank", *reranked))
    return Hit(chunk=scored.chunk, score=fused, rel_score=float(node.score or 0.0), legs=scored.legs,
               evidence=tuple(evidence))


def _nothing_found(retriever: HybridRetriever, names: list[str]) -> str:
    where = ", ".join(names)
    if retriever.keyword_only:
        return f"No keyword match in {where}, and no vector search was possible: nothing found."
    return f"Nothing found in {where}: no vector hits and no keyword matches."
