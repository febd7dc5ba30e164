"""Ranking metrics per query and bootstrap confidence intervals (BEIR's metrics: Thakur et al.,
"BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of Information Retrieval Models", NeurIPS 2021).

A run is one ranked list of document ids per query; judgements are graded
(grade > 0 is relevant). nDCG@10 uses linear gain, gain = grade, discounted by
log2(rank + 1), as trec_eval / pytrec_eval (and so BEIR) compute it, so our
figures compare with published ones; nDCGe@10 uses exponential gain, 2^grade - 1
(Burges et al. 2005), which rewards putting the *most* relevant documents first
on graded sets such as Cranfield. The ideal ranking is all judged documents by
grade. The other metrics are binary.

Defaults are chosen by `paired_bootstrap`: the same queries scored under two
settings, the per-query differences resampled together, so the CI is of the
difference itself (much narrower than two overlapping per-setting CIs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

METRICS = ("ndcg@10", "ndcge@10", "p@5", "recall@5", "success@5", "recall@10", "recall@100", "mrr@10", "map")
FEW_QUERIES = 50      # below this many queries a CI is too wide to choose anything by


def ndcg_at(ranking: Sequence[str], grades: Mapping[str, int], k: int, *, exponential: bool = False) -> float:
    """Σ gain/log2(i+1) over the top k, over the same for the ideal order (Järvelin & Kekäläinen 2002).

    gain = grade (linear, trec_eval) or 2^grade - 1 (exponential).
    """
    def gain(grade: int) -> float:
        return float(2 ** grade - 1) if exponential else float(grade)

    dcg = sum(gain(grades.get(d, 0)) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum(gain(g) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def precision_at(ranking: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """Relevant documents in the top k over k (a short ranking still divides by k)."""
    return sum(1 for d in ranking[:k] if grades.get(d, 0) > 0) / k


def success_at(ranking: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """1 when at least one relevant document is in the top k: what an answer built from k sources needs."""
    return 1.0 if any(grades.get(d, 0) > 0 for d in ranking[:k]) else 0.0


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
    return {"ndcg@10": ndcg_at(ranking, grades, 10), "ndcge@10": ndcg_at(ranking, grades, 10, exponential=True),
            "p@5": precision_at(ranking, grades, 5), "recall@5": recall_at(ranking, grades, 5),
            "success@5": success_at(ranking, grades, 5), "recall@10": recall_at(ranking, grades, 10),
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


def paired_bootstrap(a: Sequence[float], b: Sequence[float], resamples: int = 1000, seed: int = 42,
                     level: float = 0.95) -> dict[str, float]:
    """Mean of b - a over the same queries, with a percentile bootstrap CI of that difference.

    The queries are resampled together (one index draws both scores), so what
    varies between queries cancels out. `b_wins` is the share of resamples in
    which b's mean is higher: near 1 or 0 the difference is real, near 0.5 it is noise.
    """
    if len(a) != len(b):
        raise ValueError(f"paired bootstrap needs the same queries: {len(a)} against {len(b)} scores")
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    if not diffs:
        return {"diff": 0.0, "ci_low": 0.0, "ci_high": 0.0, "b_wins": 0.5}
    import numpy as np

    data = np.asarray(diffs, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.array([data[rng.integers(0, len(data), len(data))].mean() for _ in range(resamples)])
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return {"diff": float(data.mean()), "ci_low": float(lo), "ci_high": float(hi),
            "b_wins": float((means > 0).mean() + 0.5 * (means == 0).mean())}


def score_runs(runs: Mapping[str, Sequence[str]],
               qrels: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, float]]:
    """Query id -> metric -> value, for every judged query; a query with no run counts as all zeros."""
    return {q: per_query(runs.get(q, []), grades) for q, grades in qrels.items()}


def summarise_scores(scores: Mapping[str, Mapping[str, float]], resamples: int = 1000,
                     seed: int = 42) -> dict[str, dict[str, float]]:
    """Mean and 95% CI per metric from per-query scores."""
    out = {}
    for name in METRICS:
        values = [row[name] for row in scores.values()]
        lo, hi = bootstrap_ci(values, resamples, seed)
        out[name] = {"mean": sum(values) / len(values) if values else 0.0, "ci_low": lo, "ci_high": hi}
    return out


def compare(a: Mapping[str, Mapping[str, float]], b: Mapping[str, Mapping[str, float]],
            resamples: int = 1000, seed: int = 42) -> dict[str, dict[str, float]]:
    """Metric -> paired bootstrap of b - a over the queries both were scored on (query ids must match)."""
    if set(a) != set(b):
        raise ValueError(f"the two runs were scored on different queries ({len(a)} and {len(b)}; "
                         f"{len(set(a) ^ set(b))} differ)")
    qids = list(a)
    return {name: paired_bootstrap([a[q][name] for q in qids], [b[q][name] for q in qids], resamples, seed)
            for name in METRICS}
