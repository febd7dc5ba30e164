"""Entropy clusters of a collection's chunks (peaks of a 20-bin histogram), reported by `ragtui collections info`.

Chroma builds its own HNSW graph, so the clusters only describe the collection:
how much is prose, code/tables, boilerplate, or junk that slipped through.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

BINS = 20
H_RANGE = (0.0, 8.0)
PEAK_SHARE = 0.05        # a peak holds more than 5% of all chunks
MICRO_SHARE = 0.005      # a cluster under 0.5% of all chunks is a micro-cluster


@dataclass(frozen=True)
class Cluster:
    label: str
    size: int
    h_mean: float
    h_std: float
    word_mean: float
    excluded: bool


def entropy_histogram(values: Sequence[float], bins: int = BINS) -> list[int]:
    """Counts over `bins` equal bins of [0, 8] bits; values outside land in the end bins."""
    lo, hi = H_RANGE
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int((v - lo) / (hi - lo) * bins)))] += 1
    return counts


def find_peaks(hist: Sequence[int], share: float = PEAK_SHARE) -> list[int]:
    """Bins that are local maxima holding more than `share` of the total."""
    total = sum(hist)
    peaks = []
    for i, n in enumerate(hist):
        left = hist[i - 1] if i > 0 else -1
        right = hist[i + 1] if i + 1 < len(hist) else -1
        if n > share * total and n >= left and n > right:
            peaks.append(i)
    return peaks


def cluster_label(h_mean: float, word_mean: float, size: int, total: int, entropy_min: float,
                  entropy_max: float) -> tuple[str, bool]:
    """(label, excluded) by entropy and words; junk labels win over micro-cluster."""
    if h_mean > entropy_max:
        return "garbage", True
    if h_mean < entropy_min and word_mean < 5:
        return "sparse/empty", True
    if size < MICRO_SHARE * total:
        return "micro-cluster", False
    if h_mean < 2.5:
        return "boilerplate", False
    if word_mean < 30:
        return "code/technical", False
    return "natural language", False


def entropy_clusters(stats: Sequence[tuple[float, int]], entropy_min: float, entropy_max: float) -> list[Cluster]:
    """Chunks (entropy, words) assigned to the nearest histogram peak, each cluster labelled."""
    if not stats:
        return []
    hist = entropy_histogram([h for h, _ in stats])
    lo, hi = H_RANGE
    width = (hi - lo) / BINS
    centers = [lo + (i + 0.5) * width for i in find_peaks(hist)]
    if not centers:
        centers = [sum(h for h, _ in stats) / len(stats)]
    groups: list[list[tuple[float, int]]] = [[] for _ in centers]
    for h, w in stats:
        groups[min(range(len(centers)), key=lambda k: abs(centers[k] - h))].append((h, w))
    out = []
    for group in groups:
        if not group:
            continue
        n = len(group)
        mean = sum(h for h, _ in group) / n
        std = math.sqrt(sum((h - mean) ** 2 for h, _ in group) / n)
        words = sum(w for _, w in group) / n
        label, excluded = cluster_label(mean, words, n, len(stats), entropy_min, entropy_max)
        out.append(Cluster(label, n, mean, std, words, excluded))
    return out
