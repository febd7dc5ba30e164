"""A follow-up turn's two retrievals (the question as typed, and its standalone rewrite) fused into one list.

Reciprocal rank fusion over the two rankings (Cormack et al., SIGIR 2009), keyed by (collection, chunk
id): a chunk only the typed words found still ranks as it did there, so a poor
rewrite can add sources but never push out what the typed question finds. The
union is kept whole (no cut), relative scores are recomputed over the fused
scores, and each hit's evidence keeps both runs: "query"/"rewrite" (its rank in
each run), the typed run's legs as they were and the rewrite's prefixed "rewrite:".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ragtui.model import LegRank
from ragtui.retrieve.fusion import ranked, rrf_merge
from ragtui.retrieve.result import Hit

Key = tuple[str, str]


def fuse_runs(typed: Sequence[Hit], rewrite: Sequence[Hit], k: int) -> list[Hit]:
    """RRF of the typed and rewritten questions' hits, best first (see the module docstring)."""
    runs = (("query", typed), ("rewrite", rewrite))
    found: dict[Key, list[tuple[str, int, Hit]]] = {}
    rankings: list[list[Key]] = []
    for name, hits in runs:
        ranking = []
        for rank, hit in enumerate(hits, start=1):
            key = (hit.chunk.meta.collection, hit.chunk.id)
            if key in found and any(run == name for run, _, _ in found[key]):
                continue
            found.setdefault(key, []).append((name, rank, hit))
            ranking.append(key)
        rankings.append(ranking)
    scores = rrf_merge([r for r in rankings if r], k)
    order = ranked(scores)
    lo, hi = (min(scores.values()), max(scores.values())) if scores else (0.0, 0.0)
    out = []
    for key in order:
        entries = found[key]
        first = entries[0][2]
        evidence = [LegRank(name, rank, hit.score) for name, rank, hit in entries]
        for name, _, hit in entries:
            prefix = "" if name == "query" else "rewrite:"
            evidence += [replace(e, leg=prefix + e.leg) for e in hit.evidence]
        legs = tuple(dict.fromkeys(leg for _, _, hit in entries for leg in hit.legs))
        rel = 1.0 if hi == lo else (scores[key] - lo) / (hi - lo)
        out.append(replace(first, score=scores[key], rel_score=rel, legs=legs, evidence=tuple(evidence)))
    return out
