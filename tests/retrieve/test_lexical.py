from __future__ import annotations

import math

import pytest

from ragtui.retrieve.lexical import (
    idf_third,
    needs_or_tier,
    passes_ic_gate,
    plan_keyword_query,
    query_words,
    rank_by_idf,
    smoothed_idf,
    split_long_query,
    synonym_budget,
)


def test_query_words_are_lowercased_alphanumeric_runs_without_repeats() -> None:
    assert query_words('Toilet-flushing "control"? AND toilet (v2)') == ["toilet", "flushing", "control", "and", "v2"]
    assert query_words("?!  ,") == []


def test_smoothed_idf_hand_computed() -> None:
    assert smoothed_idf(99, 9) == pytest.approx(math.log(10))        # ln(100/10) = 2.302585
    assert smoothed_idf(99, 0) == pytest.approx(math.log(100))       # df = 0 is the maximum, ln(N+1)
    assert smoothed_idf(99, 99) == pytest.approx(0.0)
    assert smoothed_idf(3, 1) == pytest.approx(0.693147, abs=1e-6)   # ln(4/2)


def test_ic_gate_uses_the_mean_and_rejects_empty_queries() -> None:
    assert passes_ic_gate([0.2, 0.9], 0.5)                  # mean 0.55
    assert not passes_ic_gate([0.2, 0.7], 0.5)              # mean 0.45
    assert passes_ic_gate([0.5], 0.5)                       # the bound itself passes
    assert not passes_ic_gate([], 0.5)


def test_rank_by_idf_is_stable_on_ties() -> None:
    assert rank_by_idf({"a": 1.0, "b": 3.0, "c": 1.0, "d": 2.0}) == ["b", "d", "a", "c"]


def test_long_query_keeps_top_two_thirds_only_above_the_threshold() -> None:
    words = ["w1", "w2", "w3", "w4", "w5"]
    assert split_long_query(words, 5) == (words, [])
    six = [*words, "w6"]
    assert split_long_query(six, 5) == (six[:4], ["w5", "w6"])
    seven = [*six, "w7"]
    assert split_long_query(seven, 5) == (seven[:5], ["w6", "w7"])     # ceil(14/3) = 5


def test_idf_thirds() -> None:
    assert [idf_third(r, 3) for r in range(3)] == [0, 1, 2]
    assert [idf_third(r, 6) for r in range(6)] == [0, 0, 1, 1, 2, 2]
    assert [idf_third(r, 4) for r in range(4)] == [0, 0, 1, 2]
    assert idf_third(0, 1) == 0


def test_synonym_budget_per_third_and_df_zero_rule() -> None:
    assert [synonym_budget(r, 6, 5, df=10) for r in range(6)] == [5, 5, 3, 3, 1, 1]
    assert [synonym_budget(r, 3, 4, df=10) for r in range(3)] == [4, 2, 1]
    assert synonym_budget(2, 3, 1, df=10) == 1
    assert synonym_budget(1, 3, 1, df=10) == 1                 # ceil(1/2) = 1
    assert synonym_budget(5, 6, 5, df=0) == 5                  # absent word: full budget whatever its rank
    assert synonym_budget(0, 3, 0, df=0) == 0                  # max 0 = expansion off


def test_tier_two_fires_below_three_and_hits() -> None:
    assert needs_or_tier(0) and needs_or_tier(2)
    assert not needs_or_tier(3)


def test_plan_applies_gate_filter_and_budgets_in_order() -> None:
    n = 999
    df = {"the": 900, "of": 800, "toilet": 5, "flushing": 50, "control": 200, "valve": 20, "zyx": 0}
    words = ["the", "toilet", "flushing", "control", "of", "valve", "zyx"]
    plan = plan_keyword_query(words, df, n, min_query_ic=0.5, long_query_threshold=5, max_synonyms=5)
    assert plan.gate_passed
    assert plan.kept == ["zyx", "toilet", "valve", "flushing", "control"]
    assert plan.dropped == ["of", "the"]
    assert plan.budgets == {"zyx": 5, "toilet": 5, "valve": 3, "flushing": 3, "control": 1}
    assert plan.idf["toilet"] == pytest.approx(math.log(1000 / 6))


def test_plan_gate_rejects_stop_word_queries() -> None:
    plan = plan_keyword_query(["and", "or"], {"and": 990, "or": 980}, 999, min_query_ic=0.5,
                              long_query_threshold=5, max_synonyms=5)
    assert not plan.gate_passed and plan.kept == [] and plan.dropped == ["and", "or"]
    assert plan.mean_idf < 0.5


def test_question_words_are_not_required_and_not_expanded() -> None:
    words = query_words("How do I start the centrifugal pump?")
    df = {"how": 2, "do": 3, "i": 900, "start": 40, "the": 990, "centrifugal": 5, "pump": 30}
    plan = plan_keyword_query(words, df, 1000, min_query_ic=0.5, long_query_threshold=5, max_synonyms=5)
    assert plan.gate_passed
    # "how" and "do" are rare in this collection (high IDF): they count in the gate, yet are not AND terms
    assert set(plan.kept) == {"start", "the", "centrifugal", "pump"}
    assert {"how", "do", "i"} <= set(plan.dropped)
    assert "do" not in plan.budgets and "how" not in plan.budgets
    assert plan.words == words                       # the meta still lists every word typed


def test_a_query_of_question_words_only_skips_the_leg() -> None:
    plan = plan_keyword_query(["what", "is", "it"], {"what": 1, "is": 1, "it": 1}, 1000, min_query_ic=0.5,
                              long_query_threshold=5, max_synonyms=5)
    assert not plan.gate_passed and plan.kept == []
