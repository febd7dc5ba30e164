"""Merging the legs' scores into one ranking: best score per chunk across models, then an additive keyword
boost or reciprocal rank fusion.

Scores are keyed by chunk id, so a chunk found by several legs or models is one
entry. Pure functions; the retriever decides which to call from retrieve.fusion.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def best_per_chunk(*legs: Mapping[K, float]) -> dict[K, float]:
    """Highest score per chunk across embedding models (one index per model, each searched; a chunk keeps its best)."""
    out: dict[K, float] = {}
    for leg in legs:
        for key, score in leg.items():
            if key not in out or score > out[key]:
                out[key] = score
    return out


def boost_merge(vector: Mapping[K, float], keyword: Iterable[K], weight: float) -> dict[K, float]:
    """Additive keyword boost: both legs -> vector + weight; keyword only -> weight; vector only -> vector."""
    out = dict(vector)
    for key in keyword:
        out[key] = out.get(key, 0.0) + weight
    return out


def rrf_merge(rankings: Sequence[Sequence[K]], k: int) -> dict[K, float]:
    """Reciprocal rank fusion: sum over legs of 1 / (k + rank), rank counted from 1 (Cormack, Clarke &
    Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009,
    with k = 60)."""
    out: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            out[key] = out.get(key, 0.0) + 1.0 / (k + rank)
    return out


def ranked(scores: Mapping[K, float]) -> list[K]:
    """Keys by score, highest first; ties in insertion order."""
    return sorted(scores, key=lambda key: -scores[key])
