"""The answer eval's metrics on hand-computed data: SQuAD normalisation and F1, containment, annotation and
packing precision/recall, citation precision/recall, quotes, summaries and paired comparisons."""

from __future__ import annotations

import pytest

from ragtui.evaluation.answer_metrics import (
    AnsweredQuestion,
    answer_scores,
    compare_answers,
    contains_reference,
    normalize_answer,
    strip_citations,
    summarise_answers,
    token_f1,
)
from ragtui.evaluation.judge import fit_prompt, shares, statements


def test_squad_normalisation_lowercases_and_drops_punctuation_articles_and_extra_space() -> None:
    assert normalize_answer("The  Denver Broncos!") == "denver broncos"
    assert normalize_answer("An apple, a day; the END.") == "apple day end"
    assert normalize_answer("Levi's Stadium") == "levis stadium"
    assert normalize_answer("theory of anatomy") == "theory of anatomy"      # articles only as whole words


def test_token_f1_as_the_squad_script_computes_it() -> None:
    # answer tokens: denver broncos won (3); reference: denver broncos (2); shared 2: P 2/3, R 1, F1 0.8
    assert token_f1("The Denver Broncos won.", "Denver Broncos") == pytest.approx(0.8)
    # repeated tokens count once per occurrence in both (a bag): "drag drag" vs "drag": P 1/2, R 1, F1 2/3
    assert token_f1("drag drag", "drag") == pytest.approx(2 / 3)
    assert token_f1("nothing shared", "Denver") == 0.0
    assert token_f1("", "Denver") == 0.0


def test_citations_are_removed_before_scoring_and_containment_is_on_whole_tokens() -> None:
    assert strip_citations("Air [1] cools it [2, 3].") == "Air   cools it  ."
    # without removing [1] the answer would have a third token "1" and F1 0.8
    assert answer_scores("Denver Broncos [1].", ["Carolina", "Denver Broncos"]) == (1.0, 1.0)
    assert contains_reference("They played at Levi's Stadium [2].", "Levi's Stadium")
    assert not contains_reference("The Broncosville team", "Broncos")
    assert not contains_reference("anything", "the")       # a reference that normalises to nothing
    assert answer_scores("anything", []) == (0.0, 0.0)


def test_annotation_packing_and_citation_scores_by_hand() -> None:
    q = AnsweredQuestion(qid="q", question="?", references=["x"], answer="x [2] and [3] and [7]",
                         relevant=[2, 5], retrieved=[1, 2, 3, 4, 5, 6], kept=[1, 2, 3], filtered=[4, 5, 6],
                         packed=[1, 2], cited=[2, 3, 7], quotes=3, quotes_verified=2, llm_calls=7, prompt_tokens=900,
                         output_tokens=120, seconds=2.5)
    s = q.scores()
    assert s["annotation_recall"] == 1 / 2        # of relevant retrieved {2, 5}, kept {2}
    assert s["annotation_precision"] == 1 / 3     # of kept {1, 2, 3}, relevant {2}
    assert s["packed_recall"] == 1 / 2            # of {2, 5}, in the prompt {2}
    assert s["packed_precision"] == 1 / 2         # of the prompt {1, 2}, relevant {2}
    assert s["citation_precision"] == 1 / 3       # cited 2 (relevant), 3 (not), 7 (not in the prompt)
    assert s["citation_recall"] == 1.0 and s["no_citation"] == 0.0
    assert s["quotes_verified"] == 2 / 3
    assert s["faithfulness"] is None              # no judge
    assert (s["llm_calls"], s["prompt_tokens"], s["output_tokens"], s["seconds"]) == (7, 900, 120, 2.5)


def test_undefined_scores_are_none_and_left_out_of_means() -> None:
    bare = AnsweredQuestion(qid="a", question="?", references=["x"], answer="no idea", retrieved=[1],
                            kept=[], packed=[], cited=[])
    s = bare.scores(judged=True)
    assert s["annotation_recall"] is None and s["annotation_precision"] is None   # nothing relevant, nothing kept
    assert s["citation_precision"] is None and s["quotes_verified"] is None and s["faithfulness"] is None
    assert s["citation_recall"] == 0.0 and s["no_citation"] == 1.0
    judged = AnsweredQuestion(qid="b", question="?", references=["x"], answer="x [1]", relevant=[1],
                              retrieved=[1], kept=[1], packed=[1], cited=[1], statements=4, supported=3)
    summary = summarise_answers({"a": s, "b": judged.scores(judged=True)})
    assert summary["annotation_recall"]["mean"] == 1.0 and summary["annotation_recall"]["n"] == 1
    assert summary["no_citation"]["mean"] == 0.5 and summary["no_citation"]["n"] == 2
    assert summary["faithfulness"]["mean"] == 0.75


def test_paired_comparison_pairs_only_questions_both_runs_score() -> None:
    a = {"q1": {"answer_f1": 0.2, "citation_precision": None}, "q2": {"answer_f1": 0.4, "citation_precision": 1.0}}
    b = {"q1": {"answer_f1": 0.6, "citation_precision": 0.5}, "q2": {"answer_f1": 0.4, "citation_precision": 0.5}}
    diff = compare_answers(a, b)
    assert diff["answer_f1"]["diff"] == pytest.approx(0.2) and diff["answer_f1"]["n"] == 2
    assert diff["citation_precision"]["diff"] == pytest.approx(-0.5) and diff["citation_precision"]["n"] == 1
    with pytest.raises(ValueError, match="different questions"):
        compare_answers(a, {"q1": b["q1"]})


def test_statements_are_sentences_of_three_words_or_more() -> None:
    answer = "Gas turbines are cooled by air [1]. See [2]. Swept wings delay drag [2][3]! 42 is it."
    assert statements(answer) == ["Gas turbines are cooled by air [1].", "Swept wings delay drag [2][3]!",
                                  "42 is it."]


def test_judge_prompt_keeps_short_sources_whole_and_shares_the_rest() -> None:
    assert shares([10, 500, 300], 400) == [10, 195, 195]     # 10 whole, the 390 left split
    assert shares([10, 20], 400) == [10, 20] and shares([50], -5) == [0]
    messages, cut = fit_prompt("A claim here.", [(1, "short"), (2, "x" * 100_000)], 2000)
    text = "".join(t for _, t in messages)
    assert cut and "short" in text and "A claim here." in text and len(text) < 2000 * 3.5
    assert fit_prompt("A claim here.", [(1, "short")], 2000) == (fit_prompt("A claim here.", [(1, "short")],
                                                                            100_000)[0], False)


def test_reference_recall_and_rouge_l_by_hand() -> None:
    from ragtui.evaluation.answer_metrics import reference_recall, text_scores

    # reference tokens (SQuAD-normalised) cat, sat, on, mat (articles dropped): the answer holds cat, on, mat
    assert reference_recall("A cat was sitting on the mat [1].", "The cat sat on the mat") == 3 / 4
    assert reference_recall("anything", "the") == 0.0
    # ROUGE-L with the Porter stemmer: "sat" and "sitting" differ; LCS cat on the mat = 4 of 7 answer and 6
    # reference tokens: P 4/7, R 4/6, F 2PR / (P + R) = 8/13
    scores = text_scores("a cat was sitting on the mat [2]", ["the cat sat on the mat", "dog"])
    assert scores["rouge_l"] == pytest.approx(8 / 13) and scores["answer_recall"] == 3 / 4
    assert text_scores("x", []) == dict.fromkeys(("answer_f1", "answer_contains", "answer_recall", "rouge_l"), 0.0)


@pytest.mark.parametrize(("answer", "abstains"), [
    ("The sources do not answer this question.", True),
    ("The provided sources don't mention the colour [1].", True),
    ("I cannot determine this from the sources.", True),
    ("There is no information about it in [2].", True),
    ("The answer is not stated in the sources.", True),
    ("Blades are cooled by air bled from the compressor [1].", False),
    ("Air cools them [1]. " + "More detail follows here. " * 20 + "Other sources do not mention it.", False),
])
def test_an_answer_that_says_the_sources_do_not_answer(answer: str, abstains: bool) -> None:
    from ragtui.evaluation.answer_metrics import says_sources_do_not_answer

    assert says_sources_do_not_answer(answer) is abstains


def test_abstention_is_keeping_no_source_or_saying_so_and_counts_by_answerability() -> None:
    unanswerable = AnsweredQuestion(qid="u", question="?", references=[], answer="", retrieved=[1, 2],
                                    filtered=[1, 2], error="synthesize: no relevant sources to answer from")
    assert unanswerable.abstained
    s = unanswerable.scores()
    assert s["abstention"] == 1.0 and s["false_abstention"] is None and s["answer_f1"] is None
    answered = AnsweredQuestion(qid="q", question="?", references=["x"], answer="x [1]", kept=[1], cited=[1])
    assert not answered.abstained and answered.scores()["false_abstention"] == 0.0
    assert answered.scores()["abstention"] is None
    failed = AnsweredQuestion(qid="f", question="?", references=[], error="retrieve: the embedder is down")
    assert not failed.abstained          # a run that failed did not abstain


def test_judge_verdicts_are_parsed_from_the_first_word() -> None:
    from ragtui.evaluation.grading import parse_verdict

    assert parse_verdict("RIGHT: it names the compressor.") == ("right", "it names the compressor")
    assert parse_verdict("**Partly** - only one of two datasets") == ("partly", "only one of two datasets")
    assert parse_verdict("Incorrect. It names another model.") == ("wrong", "It names another model")
    assert parse_verdict("ABSTAINED") == ("abstained", "")
    label, reason = parse_verdict("I think the answer is fine\x1b[2J")      # no label; the reply made inert
    assert label == "" and reason.startswith("I think the answer is fine") and "\x1b" not in reason
    assert len(parse_verdict("WRONG " + "x" * 5000)[1]) == 300


def test_cohen_kappa_by_hand() -> None:
    from ragtui.evaluation.grading import agreement_report, cohen_kappa

    # 10 rows: observed 8/10; label frequencies right 5 wrong 5, verdicts right 5 wrong 5: expected 0.5
    labels = ["right"] * 5 + ["wrong"] * 5
    verdicts = ["right"] * 4 + ["wrong"] + ["right"] + ["wrong"] * 4
    assert cohen_kappa(labels, verdicts) == pytest.approx((0.8 - 0.5) / 0.5)
    assert cohen_kappa(["right"] * 3, ["right"] * 3) is None          # one label for every row: undefined
    assert cohen_kappa(labels, labels) == 1.0
    report = agreement_report(labels, verdicts)
    assert report["agreement"]["mean"] == 0.8 and report["confusion"] == {"right": {"right": 4, "wrong": 1},
                                                                         "wrong": {"right": 1, "wrong": 4}}


def test_a_verdict_the_judge_did_not_give_counts_as_wrong() -> None:
    """A reply that begins with no label (a small model echoing the prompt) or a failed call leaves the verdict
    empty: the answer scores 0, as the report's notice says, and is not left out of the mean."""
    graded = {v: AnsweredQuestion(qid=v, question="?", references=["x"], answer="x", kept=[1], verdict=v)
              for v in ("right", "partly", "wrong", "abstained", "")}
    assert {v: q.scores(judged=True)["correctness"] for v, q in graded.items()} == {
        "right": 1.0, "partly": 0.5, "wrong": 0.0, "abstained": 0.0, "": 0.0}
    assert graded["right"].scores()["correctness"] is None              # no judge, no correctness
