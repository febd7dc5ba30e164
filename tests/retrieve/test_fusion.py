from __future__ import annotations

import pytest

from ragtui.model.retrieval import CollectionMeta, KeywordMeta, KeywordTier
from ragtui.retrieve.fusion import (
    best_per_chunk,
    boost_merge,
    mean_over_legs,
    normalised,
    ranked,
    reciprocal_ranks,
    relative_scores,
    rrf_merge,
)
from ragtui.retrieve.hybrid_retriever import answered_legs


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


def test_relative_scores() -> None:
    assert relative_scores([0.9, 0.6, 0.3]) == pytest.approx([1.0, 0.5, 0.0])
    assert relative_scores([0.4, 0.4]) == [1.0, 1.0]
    assert relative_scores([]) == []
    assert normalised({"a": 12.0, "b": 3.0, "c": 6.0}) == pytest.approx({"a": 1.0, "b": 0.0, "c": 1 / 3})


def test_the_mean_counts_the_legs_that_answered_not_the_legs_that_found_the_chunk() -> None:
    vector, keyword = {"a": 1.0, "b": 0.5}, {"b": 1.0, "k": 0.2}
    both = mean_over_legs([vector, keyword], 2)
    assert both == pytest.approx({"a": 0.5, "b": 0.75, "k": 0.1})    # a leg that ran and missed a chunk gives it 0
    assert mean_over_legs([keyword], 1) == keyword                   # the one leg that could run: its scores
    assert mean_over_legs([{}, keyword], 2) == pytest.approx({"b": 0.5, "k": 0.1})   # ran and found nothing: it counts


def test_rrf_is_the_sum_of_each_legs_reciprocal_ranks() -> None:
    assert reciprocal_ranks(["a", "b"], 20) == pytest.approx({"a": 1 / 21, "b": 1 / 22})
    assert rrf_merge([["a", "b"], ["b"]], 20) == pytest.approx({"a": 1 / 21, "b": 1 / 22 + 1 / 21})


def test_a_keyword_leg_its_gate_skipped_abstains_but_one_that_found_nothing_answered() -> None:
    def legs(tier: KeywordTier, vector_ran: bool = True) -> frozenset[str]:
        return answered_legs(CollectionMeta(keyword=KeywordMeta(tier=tier, hits=0)), vector_ran)

    assert legs(2) == {"vector", "keyword"}            # ran its OR tier and matched nothing: a 0 in the mean
    assert legs("skipped") == legs("off") == {"vector"}    # the words say nothing here: no evidence either way
    assert legs(1, vector_ran=False) == {"keyword"}
