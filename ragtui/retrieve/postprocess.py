"""After the merge: diversity cap, dedupe, relative scores, cuts (RAGWeed 3e-3f).

Each step is a pure function over any items (tested on plain values) and a
LlamaIndex `BaseNodePostprocessor` that applies it to `NodeWithScore` lists, in
the order `postprocessors(settings)` returns. The nodes must arrive best first
and carry `collection` and `source` metadata, as the hybrid retriever's do.
Imports LlamaIndex at module level: only the retrieval path imports this.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

if TYPE_CHECKING:
    from ragtui.config import RetrieveSettings

T = TypeVar("T")

FUSED_SCORE_KEY = "fused_score"   # node metadata: the merged score, kept when `score` becomes rel_score
DEDUPE_CHARS = 200


def cap_per_file(items: Sequence[T], key: Callable[[T], Hashable], max_per_file: int) -> list[T]:
    """At most `max_per_file` items per source file, best first (RAGWeed 3e diversity cap)."""
    seen: dict[Hashable, int] = {}
    out = []
    for item in items:
        k = key(item)
        if seen.get(k, 0) < max_per_file:
            seen[k] = seen.get(k, 0) + 1
            out.append(item)
    return out


def dedupe_leading(items: Sequence[T], text: Callable[[T], str], chars: int = DEDUPE_CHARS) -> list[T]:
    """Drop items whose first `chars` characters repeat an earlier (better) item's (RAGWeed 3e)."""
    seen: set[str] = set()
    out = []
    for item in items:
        lead = text(item)[:chars]
        if lead not in seen:
            seen.add(lead)
            out.append(item)
    return out


def relative_scores(scores: Sequence[float]) -> list[float]:
    """(s - min) / (max - min) (RAGWeed 3f): best 1.0, worst 0.0; all 1.0 when every score is equal."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    if hi == lo:
        return [1.0] * len(scores)
    return [(s - lo) / (hi - lo) for s in scores]


def keep_top_percent(n: int, percent: int) -> int:
    """How many of n results PRE_ANNOTATE_KEEP keeps: ceil(n * percent / 100), at least 1 when n > 0."""
    return min(n, max(1 if n else 0, math.ceil(n * percent / 100)))


def _source_key(n: NodeWithScore) -> tuple[Any, Any]:
    return n.node.metadata.get("collection"), n.node.metadata.get("source")


class PerFileCap(BaseNodePostprocessor):
    """At most `max_per_file` chunks per (collection, source file) (RAGWeed 3e)."""

    max_per_file: int = 2

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return cap_per_file(nodes, _source_key, self.max_per_file)


class LeadingTextDedupe(BaseNodePostprocessor):
    """One chunk per identical leading 200 characters, the best-scoring (RAGWeed 3e)."""

    chars: int = DEDUPE_CHARS

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return dedupe_leading(nodes, lambda n: n.node.get_content(), self.chars)


class RelativeScore(BaseNodePostprocessor):
    """Score becomes the relative score in [0, 1]; the fused score moves to metadata (RAGWeed 3f).

    After a reranker the scores are the fused ones redistributed by the new rank
    (hybrid._reranked), and each node's own fused score is already in metadata.
    """

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        fused = [n.score or 0.0 for n in nodes]
        out = []
        for n, raw, rel in zip(nodes, fused, relative_scores(fused), strict=True):
            n.node.metadata.setdefault(FUSED_SCORE_KEY, raw)   # a reranked node's own fused score is already there
            out.append(NodeWithScore(node=n.node, score=rel))
        return out


class MinScoreCut(BaseNodePostprocessor):
    """Drops nodes whose relative score is below `min_score` (RAGWeed 3f MIN_SCORE; 0 keeps all)."""

    min_score: float = 0.0

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return [n for n in nodes if (n.score or 0.0) >= self.min_score]


class PreAnnotateKeep(BaseNodePostprocessor):
    """Keeps the best `percent` % of nodes by relative score (RAGWeed 3f PRE_ANNOTATE_KEEP), at most `most`."""

    percent: int = 100
    most: int = 10_000

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        ordered = sorted(nodes, key=lambda n: -(n.score or 0.0))
        return ordered[:min(self.most, keep_top_percent(len(ordered), self.percent))]


def postprocessors(retrieve: RetrieveSettings, *, per_file_cap: bool = True) -> list[BaseNodePostprocessor]:
    """The RAGWeed 3e-3f chain in order: cap, dedupe, normalise, min_score, pre_annotate_keep (and annotate_max).

    `per_file_cap=False` leaves the cap out (evaluation scores documents, and a
    cap would hide a document's lower chunks only, not change its best score).
    """
    chain: list[BaseNodePostprocessor] = [PerFileCap(max_per_file=retrieve.max_chunks_per_file)] \
        if per_file_cap else []
    return [*chain, LeadingTextDedupe(), RelativeScore(), MinScoreCut(min_score=retrieve.min_score),
            PreAnnotateKeep(percent=retrieve.pre_annotate_keep, most=retrieve.annotate_max)]
