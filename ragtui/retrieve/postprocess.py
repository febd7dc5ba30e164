"""After the merge: diversity cap per file, dedupe, relative scores, cuts.

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

from ragtui import heavy

heavy.load("llama_index")  # first, so that this module's imports of it are lookups (ragtui/heavy.py)
from llama_index.core.bridge.pydantic import Field  # noqa: E402
from llama_index.core.postprocessor.types import BaseNodePostprocessor  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle  # noqa: E402

from ragtui.retrieve.fusion import relative_scores  # noqa: E402

if TYPE_CHECKING:
    from ragtui.config_sections import RetrieveSettings

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

FUSED_SCORE_KEY = "fused_score"   # node metadata: the merged score, kept when `score` becomes rel_score
DEDUPE_CHARS = 200


def cap_per_file(items: Sequence[T], key: Callable[[T], Hashable], max_per_file: int) -> list[T]:
    """At most `max_per_file` items per source file, best first (the "flat" diversity cap)."""
    return cap_passages(items, key, lambda _: None, lambda _: max_per_file)


def passages_allowed(file_chunks: int, floor: int) -> int:
    """How many chunks a file of `file_chunks` chunks may give: max(floor, floor(sqrt(n))).

    A short file keeps the flat cap; a long one (a manual of hundreds of pages)
    may contribute more distinct passages, growing slowly enough that one file
    does not crowd out the rest of a library.
    """
    return max(floor, math.isqrt(max(file_chunks, 0)))


def cap_passages(items: Sequence[T], key: Callable[[T], K], span: Callable[[T], tuple[int, int] | None],
                 allowed: Callable[[K], int]) -> list[T]:
    """Best first, at most `allowed(file)` items per file, none overlapping an item already kept from its file.

    `span` gives an item's (start, end) char offsets in its file, None when unknown
    (never counts as overlapping). Two chunks overlap when they share a character.
    """
    kept: dict[K, list[tuple[int, int] | None]] = {}
    out = []
    for item in items:
        k = key(item)
        spans = kept.setdefault(k, [])
        here = span(item)
        if len(spans) >= allowed(k) or any(_overlap(here, other) for other in spans):
            continue
        spans.append(here)
        out.append(item)
    return out


def _overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


def dedupe_leading(items: Sequence[T], text: Callable[[T], str], chars: int = DEDUPE_CHARS) -> list[T]:
    """Drop items whose first `chars` characters repeat an earlier (better) item's."""
    seen: set[str] = set()
    out = []
    for item in items:
        lead = text(item)[:chars]
        if lead not in seen:
            seen.add(lead)
            out.append(item)
    return out


def keep_top_percent(n: int, percent: int) -> int:
    """How many of n results PRE_ANNOTATE_KEEP keeps: ceil(n * percent / 100), at least 1 when n > 0."""
    return min(n, max(1 if n else 0, math.ceil(n * percent / 100)))


def _source_key(n: NodeWithScore) -> tuple[Any, Any]:
    return n.node.metadata.get("collection"), n.node.metadata.get("source")


def _span(n: NodeWithScore) -> tuple[int, int] | None:
    start, end = n.node.metadata.get("char_start"), n.node.metadata.get("char_end")
    return (start, end) if isinstance(start, int) and isinstance(end, int) and 0 <= start < end else None


class PerFileCap(BaseNodePostprocessor):
    """The per-file cap per (collection, source file) (`retrieve.per_file_cap`).

    "flat": at most `max_per_file` chunks. "passages": at most
    `passages_allowed(n, max_per_file)` for a file of n chunks (`file_chunks`,
    keyed by (collection, source); unknown counts as short), none overlapping a
    chunk already kept from the same file.
    """

    max_per_file: int = 2
    rule: str = "passages"
    file_chunks: dict[tuple[str, str], int] = Field(default_factory=dict)

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if self.rule == "flat":
            return cap_per_file(nodes, _source_key, self.max_per_file)
        return cap_passages(nodes, _source_key, _span,
                            lambda k: passages_allowed(self.file_chunks.get(k, 0), self.max_per_file))


class LeadingTextDedupe(BaseNodePostprocessor):
    """One chunk per identical leading 200 characters, the best-scoring."""

    chars: int = DEDUPE_CHARS

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return dedupe_leading(nodes, lambda n: n.node.get_content(), self.chars)


class RelativeScore(BaseNodePostprocessor):
    """Score becomes the relative score in [0, 1]; the fused score moves to metadata.

    After a reranker the scores are the fused ones redistributed by the new rank
    (pipeline._reranked), and each node's own fused score is already in metadata.
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
    """Drops nodes whose relative score is below `min_score` (0 keeps all)."""

    min_score: float = 0.0

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return [n for n in nodes if (n.score or 0.0) >= self.min_score]


class PreAnnotateKeep(BaseNodePostprocessor):
    """Keeps the best `percent` % of nodes by relative score, at most `most`."""

    percent: int = 100
    most: int = 10_000

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        ordered = sorted(nodes, key=lambda n: -(n.score or 0.0))
        return ordered[:min(self.most, keep_top_percent(len(ordered), self.percent))]


def postprocessors(retrieve: RetrieveSettings, *, per_file_cap: bool = True,
                   file_chunks: dict[tuple[str, str], int] | None = None) -> list[BaseNodePostprocessor]:
    """The chain in order: cap, dedupe, normalise, min_score, pre_annotate_keep (and annotate_max).

    `per_file_cap=False` leaves the cap out (evaluation scores documents, and a
    cap would hide a document's lower chunks only, not change its best score).
    `file_chunks`: chunks per (collection, source) of the files in the list, for
    the "passages" cap.
    """
    chain: list[BaseNodePostprocessor] = [PerFileCap(max_per_file=retrieve.max_chunks_per_file,
                                                     rule=retrieve.per_file_cap, file_chunks=file_chunks or {})] \
        if per_file_cap else []
    return [*chain, LeadingTextDedupe(), RelativeScore(), MinScoreCut(min_score=retrieve.min_score),
            PreAnnotateKeep(percent=retrieve.pre_annotate_keep, most=retrieve.annotate_max)]
