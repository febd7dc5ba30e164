from __future__ import annotations

import math
from pathlib import Path

import pytest

from ragtui.evaluation.beir import load_dataset
from ragtui.evaluation.metrics import (
    average_precision,
    bootstrap_ci,
    mrr_at,
    ndcg_at,
    recall_at,
    summarise,
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
    out = summarise({"q1": ["d1"]}, qrels, resamples=50)
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
