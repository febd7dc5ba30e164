from __future__ import annotations

import pytest

from ragtui.retrieve.fusion import best_per_chunk, boost_merge, ranked, rrf_merge


def test_best_score_per_chunk_across_models() -> None:
    assert best_per_chunk({"a": 0.5, "b": 0.7}, {"a": 0.6, "c": 0.1}) == {"a": 0.6, "b": 0.7, "c": 0.1}


def test_boost_merge_ragweed_3d() -> None:
    merged = boost_merge({"a": 0.41, "b": 0.80}, ["a", "k"], 0.15)
    assert merged == pytest.approx({"a": 0.56, "b": 0.80, "k": 0.15})
    assert ranked(merged) == ["b", "a", "k"]


def test_rrf_merge_sums_reciprocal_ranks() -> None:
    merged = rrf_merge([["a", "b", "c"], ["c", "d"]], k=60)
    assert merged["a"] == pytest.approx(1 / 61)
    assert merged["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert merged["d"] == pytest.approx(1 / 62)
    assert ranked(merged) == ["c", "a", "b", "d"]          # b and d tie at 1/62: first seen first
    assert rrf_merge([["x"]], k=1)["x"] == pytest.approx(0.5)
