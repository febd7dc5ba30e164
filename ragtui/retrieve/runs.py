"""Several retrievals of one question fused into one list: a follow-up's typed question and its standalone
rewrite, and the extra searches of retrieval strategies (the model's alternative queries, the question's
fragments).

Reciprocal rank fusion over the runs' rankings (Cormack et al., SIGIR 2009), keyed by (collection, chunk
id): a chunk only the typed words found still ranks as it did there. The first run is the question as typed.
The fused list is cut at `most` (retrieve.annotate_max, which each run already kept to), of which chunks
the typed run did not find take at most half while the typed run's hits can fill the rest, so poor extra
queries can add sources but never push out the typed question's best half. Relative scores are recomputed
over the fused scores, and each hit's evidence keeps every run: the run's name with the hit's rank in it
("query", "rewrite", "variant 1", ...), the typed run's legs as they were and the others' prefixed with
their run's name ("rewrite:vector").

The fused search's notices are its runs', each once, except a run's saying it found nothing: only the typed
run's, and only when the fused list is empty too (beside sources another run found, it would be untrue).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ragtui.model.chunks import LegRank
from ragtui.model.retrieval import Hit, Retrieval
from ragtui.retrieve.fusion import normalised, ranked, rrf_merge

Key = tuple[str, str]
Run = tuple[str, Sequence[Hit]]      # (name, hits best first); the first run is the question as typed


def fuse_runs(runs: Sequence[Run], k: int, most: int) -> list[Hit]:
    """RRF of the runs' hits, best first, at most `most` (see the module docstring)."""
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
    order = _cut(ranked(scores), set(rankings[0]) if rankings else set(), most)
    rel = normalised({key: scores[key] for key in order})
    typed = runs[0][0] if runs else ""
    out = []
    for key in order:
        entries = found[key]
        first = entries[0][2]
        evidence = [LegRank(name, rank, hit.score) for name, rank, hit in entries]
        for name, _, hit in entries:
            prefix = "" if name == typed else f"{name}:"
            evidence += [replace(e, leg=prefix + e.leg) for e in hit.evidence]
        legs = tuple(dict.fromkeys(leg for _, _, hit in entries for leg in hit.legs))
        out.append(replace(first, score=scores[key], rel_score=rel[key], legs=legs, evidence=tuple(evidence)))
    return out


def _cut(order: list[Key], typed: set[Key], most: int) -> list[Key]:
    """The first `most` of `order`, with keys not in `typed` taking at most half of them unless the typed
    ones run out; fused order kept."""
    kept: set[Key] = set()
    added = 0
    for key in order:
        if len(kept) < most and (key in typed or added < most // 2):
            kept.add(key)
            added += key not in typed
    for key in order:                      # the typed question found fewer than its share: the others fill in
        if len(kept) < most:
            kept.add(key)
    return [key for key in order if key in kept]


def fused_notices(runs: Sequence[Retrieval], fused: Sequence[Hit]) -> list[str]:
    """The notices of `runs` (the typed run first) for their fused hits `fused` (see the module docstring)."""
    kept = [n for i, run in enumerate(runs) for n in run.notices
            if not (run.nothing_found and n == run.nothing_found and (i or fused))]
    return list(dict.fromkeys(kept))
