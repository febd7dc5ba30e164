"""Merging the legs' scores into one ranking: best score per chunk across models, then reciprocal rank fusion,
a normalised score average, or an additive keyword boost.

Scores are keyed by chunk id, so a chunk found by several legs or models is one
entry. Pure functions; the retriever decides which to call from retrieve.fusion.

RRF and the normalised average are both a mean over the legs that answered for
a collection (`mean_over_legs`): a leg that ran and did not return a chunk gives
it 0, a leg that could not run there (no vectors yet, the embedder or the vector
store down) is left out of the mean instead of counting as 0 for every chunk, so
a keyword-only collection's best hit scores what a best hit scores in a
collection where both legs answered, and the collections' results can be
pooled by score. (Montague & Aslam, "Relevance score normalization for
metasearch", CIKM 2001: normalise each input, then combine; here the inputs
missing from one collection are not counted as evidence against its chunks.)
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


def reciprocal_ranks(ranking: Sequence[K], k: int) -> dict[K, float]:
    """1 / (k + rank), rank counted from 1: one leg's term of reciprocal rank fusion."""
    return {key: 1.0 / (k + rank) for rank, key in enumerate(ranking, start=1)}


def rrf_merge(rankings: Sequence[Sequence[K]], k: int) -> dict[K, float]:
    """Reciprocal rank fusion: sum over legs of 1 / (k + rank), rank counted from 1 (Cormack, Clarke &
    Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009,
    with k = 60)."""
    return mean_over_legs([reciprocal_ranks(ranking, k) for ranking in rankings], 1)


def relative_scores(scores: Sequence[float]) -> list[float]:
    """Min-max normalisation, (s - min) / (max - min): best 1.0, worst 0.0; all 1.0 when every score is equal
    (the "standard" normalisation of Montague & Aslam, CIKM 2001)."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    if hi == lo:
        return [1.0] * len(scores)
    return [(s - lo) / (hi - lo) for s in scores]


def normalised(leg: Mapping[K, float]) -> dict[K, float]:
    """One leg's scores min-max normalised to [0, 1] (relative_scores), by key."""
    return dict(zip(leg, relative_scores(list(leg.values())), strict=True))


def mean_over_legs(legs: Sequence[Mapping[K, float]], answered: int) -> dict[K, float]:
    """Per chunk, the sum of its scores in `legs` divided by `answered`, the number of legs that answered (a leg
    that ran and found nothing is among them, with nothing in `legs`); a chunk a leg did not return gets 0 there."""
    out: dict[K, float] = {}
    for leg in legs:
        for key, score in leg.items():
            out[key] = out.get(key, 0.0) + score
    return {key: total / max(answered, 1) for key, total in out.items()}


def ranked(scores: Mapping[K, float]) -> list[K]:
    """Keys by score, highest first; ties in insertion order."""
    return sorted(scores, key=lambda key: -scores[key])
