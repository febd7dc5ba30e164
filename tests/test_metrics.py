from __future__ import annotations

import math
from pathlib import Path

import pytest

from ragtui.evaluation.beir import load_dataset
from ragtui.evaluation.metrics import (
    METRICS,
    average_precision,
    bootstrap_ci,
    compare,
    mrr_at,
    ndcg_at,
    paired_bootstrap,
    per_query,
    precision_at,
    recall_at,
    score_runs,
    success_at,
    summarise_scores,
)


def test_ndcg_linear_gain_hand_computed() -> None:
    grades = {"a": 3, "b": 1}
    # ranking b, x, a: dcg = 1/log2(2) + 3/log2(4) = 1 + 1.5 = 2.5; idcg = 3 + 1/log2(3) = 3.63093
    assert ndcg_at(["b", "x", "a"], grades, 10) == pytest.approx(2.5 / (3 + 1 / math.log2(3)))
    assert ndcg_at(["a", "b"], grades, 10) == pytest.approx(1.0)
    assert ndcg_at(["x", "a"], grades, 1) == 0.0


def test_recall_mrr_map_hand_computed() -> None:
    grades = {"a": 1, "b": 2, "c": 1}
    ranking = ["x", "a", "y", "b"]
    assert recall_at(ranking, grades, 2) == pytest.approx(1 / 3)
    assert recall_at(ranking, grades, 100) == pytest.approx(2 / 3)
    assert mrr_at(ranking, grades, 10) == pytest.approx(0.5)
    assert mrr_at(ranking, grades, 1) == 0.0
    assert average_precision(ranking, grades) == pytest.approx((1 / 2 + 2 / 4) / 3)


def test_bootstrap_is_deterministic_and_brackets_the_mean() -> None:
    values = [0.0, 1.0] * 50
    lo, hi = bootstrap_ci(values)
    assert (lo, hi) == bootstrap_ci(values)
    assert lo < 0.5 < hi and hi - lo < 0.3
    assert bootstrap_ci([0.7] * 10) == pytest.approx((0.7, 0.7))


def test_summarise_counts_missing_runs_as_zero() -> None:
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    out = summarise_scores(score_runs({"q1": ["d1"]}, qrels), resamples=50)
    assert out["ndcg@10"]["mean"] == pytest.approx(0.5)
    assert out["mrr@10"]["mean"] == pytest.approx(0.5)


def test_beir_loader_keeps_judged_queries_and_positive_grades(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "T", "text": "body"}\n'
                                           '{"_id": "d2", "text": "only text"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "one"}\n{"_id": "q2", "text": "two"}\n'
                                            '{"_id": "q3", "text": "three"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td1\t2\nq2\td2\t0\nq1\td2\t1\n")
    ds = load_dataset(tmp_path)
    assert list(ds.queries) == ["q2", "q1"]
    assert ds.qrels == {"q2": {"d1": 2}, "q1": {"d2": 1}}
    assert ds.corpus["d1"].content == "T\nbody" and ds.corpus["d2"].content == "only text"
    assert list(ds.limited(1).queries) == ["q2"]


def test_exponential_gain_ndcg_hand_computed() -> None:
    grades = {"a": 3, "b": 1}
    # ranking b, x, a: gains 2^1-1 = 1 and 2^3-1 = 7; dcg = 1/1 + 7/log2(4) = 4.5; idcg = 7 + 1/log2(3)
    assert ndcg_at(["b", "x", "a"], grades, 10, exponential=True) == pytest.approx(4.5 / (7 + 1 / math.log2(3)))
    # the exponential gain punishes the swap more than the linear one
    assert ndcg_at(["b", "a"], grades, 10, exponential=True) < ndcg_at(["b", "a"], grades, 10)


def test_precision_recall_success_at_5_hand_computed() -> None:
    grades = {"a": 1, "b": 2, "c": 1, "d": 1}
    ranking = ["x", "a", "y", "b", "z", "c"]
    assert precision_at(ranking, grades, 5) == pytest.approx(2 / 5)
    assert recall_at(ranking, grades, 5) == pytest.approx(2 / 4)
    assert success_at(ranking, grades, 5) == 1.0
    assert success_at(["x", "y", "z", "w", "v", "a"], grades, 5) == 0.0
    assert precision_at(["a"], grades, 5) == pytest.approx(1 / 5)      # a short list still divides by k
    row = per_query(ranking, grades)
    assert set(row) == set(METRICS)


def test_paired_bootstrap_hand_computed() -> None:
    a = [0.5, 0.2, 0.9, 0.4]
    b = [0.7, 0.2, 1.0, 0.3]                     # differences +0.2, 0, +0.1, -0.1: mean 0.05
    out = paired_bootstrap(a, b, resamples=2000)
    assert out["diff"] == pytest.approx(0.05)
    # every resampled mean lies between the smallest and the largest difference
    assert -0.1 <= out["ci_low"] <= 0.05 <= out["ci_high"] <= 0.2
    assert out["ci_low"] < 0 < out["ci_high"]     # four queries cannot tell these apart
    assert out == paired_bootstrap(a, b, resamples=2000)          # fixed seed


def test_paired_bootstrap_sees_a_consistent_small_gain_that_unpaired_cis_hide() -> None:
    a = [i / 100 for i in range(100)]            # widely spread per-query scores
    b = [x + 0.01 for x in a]                    # B is better on every query by 0.01
    out = paired_bootstrap(a, b)
    assert out["diff"] == pytest.approx(0.01)
    assert out["ci_low"] == pytest.approx(0.01) and out["ci_high"] == pytest.approx(0.01)
    assert out["b_wins"] == 1.0
    lo_b, _ = bootstrap_ci(b)
    _, hi_a = bootstrap_ci(a)
    assert lo_b < hi_a                           # the per-setting CIs overlap


def test_paired_bootstrap_needs_the_same_queries() -> None:
    with pytest.raises(ValueError, match="same queries"):
        paired_bootstrap([0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match="different queries"):
        compare({"q1": dict.fromkeys(METRICS, 0.0)}, {"q2": dict.fromkeys(METRICS, 0.0)})
    same = {"q1": dict.fromkeys(METRICS, 0.25), "q2": dict.fromkeys(METRICS, 0.5)}
    assert compare(same, same)["ndcg@10"] == {"diff": 0.0, "ci_low": 0.0, "ci_high": 0.0, "b_wins": 0.5}
