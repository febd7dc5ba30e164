"""Ranking metrics per query and bootstrap confidence intervals (nadir's metric set, BEIR conventions).

A run is one ranked list of document ids per query; judgements are graded
(grade > 0 is relevant). nDCG uses linear gain, gain = grade, discounted by
log2(rank + 1), as trec_eval / pytrec_eval (and so BEIR) compute it; the ideal
ranking is all judged documents by grade. The other metrics are binary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "map")


def ndcg_at(ranking: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """Σ grade/log2(i+1) over the top k, over the same for the ideal order (Järvelin & Kekäläinen 2002)."""
    dcg = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranking: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """Relevant documents in the top k over all relevant documents."""
    if not grades:
        return 0.0
    return sum(1 for d in ranking[:k] if grades.get(d, 0) > 0) / len(grades)


def mrr_at(ranking: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """1 / rank of the first relevant document within the top k, else 0."""
    for i, d in enumerate(ranking[:k], start=1):
        if grades.get(d, 0) > 0:
            return 1.0 / i
    return 0.0


def average_precision(ranking: Sequence[str], grades: Mapping[str, int]) -> float:
    """Mean of precision@rank at each relevant hit, over all relevant documents (unretrieved count as 0)."""
    if not grades:
        return 0.0
    hits, total = 0, 0.0
    for i, d in enumerate(ranking, start=1):
        if grades.get(d, 0) > 0:
            hits += 1
            total += hits / i
    return total / len(grades)


def per_query(ranking: Sequence[str], grades: Mapping[str, int]) -> dict[str, float]:
    return {"ndcg@10": ndcg_at(ranking, grades, 10), "recall@10": recall_at(ranking, grades, 10),
            "recall@100": recall_at(ranking, grades, 100), "mrr@10": mrr_at(ranking, grades, 10),
            "map": average_precision(ranking, grades)}


def bootstrap_ci(values: Sequence[float], resamples: int = 1000, seed: int = 42,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean over queries (resampled with replacement, fixed seed)."""
    import numpy as np

    if not values:
        return 0.0, 0.0
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for i in range(resamples):
        means[i] = data[rng.integers(0, len(data), len(data))].mean()
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return float(lo), float(hi)


def summarise(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
              resamples: int = 1000, seed: int = 42) -> dict[str, dict[str, float]]:
    """Mean and 95% CI per metric over the judged queries; a query with no run counts as all zeros."""
    rows = [per_query(runs.get(q, []), grades) for q, grades in qrels.items()]
    out = {}
    for name in METRICS:
        values = [r[name] for r in rows]
        lo, hi = bootstrap_ci(values, resamples, seed)
        out[name] = {"mean": sum(values) / len(values) if values else 0.0, "ci_low": lo, "ci_high": hi}
    return out
