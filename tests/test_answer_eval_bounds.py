"""`ragtui eval --answers` reads each score between a floor and a ceiling, measures abstention on the questions the
corpus does not answer, and grades answers with a judge whose agreement on its calibration set is reported: the
real CLI, the fake Ollama server over HTTP, every figure computed by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ragtui.cli import main
from tests.fake_ollama import FakeOllama, Model, Reply, fenced
from tests.test_answer_eval_cli import DOCS, flags, words

ANSWERABLE = {"q1": ("What cools the gas turbine blades?", ["air bled from the compressor"], "d1"),
              "q2": ("What do swept wings delay?", ["compressibility drag", "drag"], "d2"),
              "q3": ("When do laminar boundary layers separate?", ["under adverse pressure gradients"], "d3")}
UNANSWERABLE = {"u1": "What colour are the turbine blades painted?", "u2": "Who designed the first swept wing?"}
ABSTAINS = "The sources do not answer this question."


def write_dataset(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n"
                                                 for k, (t, x) in DOCS.items()))
    rows = [{"_id": k, "text": q, "metadata": {"answers": a}} for k, (q, a, _) in ANSWERABLE.items()]
    rows += [{"_id": k, "text": q, "metadata": {"answers": []}} for k, q in UNANSWERABLE.items()]
    rows.append({"_id": "x", "text": "A query with no answers key says nothing about being answerable"})
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{k}\t{d}\t1\n" for k, (_, _, d) in ANSWERABLE.items()))
    return folder


def model(text: str) -> str:
    """Annotates every extract relevant (quoting it); abstains on the paint question (right) and the laminar one
    (wrong: the corpus answers it); otherwise quotes the source sharing most words with the question, cited."""
    if "EXTRACT" in text:
        return f'"{fenced(text.split("EXTRACT:", 1)[-1])}" This is relevant.'
    question = text.rsplit("QUESTION:", 1)[-1].split("\n", 1)[0]
    if "colour" in question or "laminar" in question:
        return ABSTAINS
    blocks = re.findall(r"(?ms)^\[(\d+)\] SOURCE:.*?^<<<\n(.*?)\n>>>$", text)
    number, best = max(blocks, key=lambda b: len(words(b[1]) & words(question)))
    return f'"{best.strip()}" [{number}]'


def judge(text: str) -> str:
    """Grades by rule: says the sources do not answer -> ABSTAINED; holds a reference word for word -> RIGHT;
    else WRONG."""
    if "STATEMENT:" in text:
        return "YES"
    *references, answer = re.findall(r"(?ms)^<<<\n(.*?)\n>>>$", text.split("REFERENCE ANSWERS:", 1)[1])
    if "do not answer" in answer or "do not say" in answer or "cannot find" in answer or "not mention" in answer:
        return "ABSTAINED: it says the sources do not answer."
    if any(r.lower() in answer.lower() for r in references):
        return "RIGHT - it gives the reference."
    return "**WRONG**: it gives something else."


def responder(body: dict[str, Any]) -> Reply:
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    return Reply.text(judge(text) if body["model"] == "judge" else model(text))


def test_every_answer_metric_has_its_floor_and_ceiling_and_abstention_is_measured(
        fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = responder
    dataset = write_dataset(tmp_path / "mini")
    assert main([*flags(tmp_path, fake_ollama.url), "eval", "--answers", "--dataset", str(dataset), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["queries"] == 5 and report["unanswerable"] == 2
    assert {q["qid"] for q in report["questions"]} == {"q1", "q2", "q3", "u1", "u2"}   # "x" is not asked
    results, per = report["results"], report["per_query"]
    # abstention: u1 abstained, u2 answered with a quote: 1 of 2; q3 abstained though the corpus answers it: 1 of 3
    assert per["u1"]["abstention"] == 1.0 and per["u2"]["abstention"] == 0.0
    assert per["q3"]["false_abstention"] == 1.0 and per["q1"]["false_abstention"] == 0.0
    assert results["abstention"]["mean"] == 0.5 and results["abstention"]["n"] == 2
    assert results["false_abstention"]["mean"] == pytest.approx(1 / 3) and results["false_abstention"]["n"] == 3
    for name in ("abstention", "false_abstention"):
        assert results[name]["ci_low"] <= results[name]["mean"] <= results[name]["ci_high"]
    # an unanswerable question has no answer metrics
    assert per["u1"]["answer_f1"] is None and per["u1"]["rouge_l"] is None and per["u1"]["citation_precision"] is None
    # floor: another question's reference as the answer shares no word with the right one
    for name in ("answer_f1", "answer_contains", "answer_recall", "rouge_l"):
        assert results[name]["floor"]["mean"] == 0.0 and results[name]["floor"]["n"] == 3
    # ceiling, passage: every gold passage holds its reference word for word; q1's passage as ROUGE-L: the LCS is
    # the reference's 5 tokens of the passage's 11: P 5/11, R 1, F 10/16
    passage = results["answer_contains"]["ceiling"]["passage"]
    assert passage["mean"] == 1.0 and passage["n"] == 3 and results["answer_recall"]["ceiling"]["passage"]["mean"] == 1
    assert report["questions"][0]["qid"] == "q1"
    # ceiling, second reference: only q2 has one: "drag" against "compressibility drag": recall 1/2, F1 2/3
    second = {m: results[m]["ceiling"]["second_reference"] for m in ("answer_f1", "answer_recall", "answer_contains")}
    assert second["answer_f1"]["mean"] == pytest.approx(2 / 3) and second["answer_f1"]["n"] == 1
    assert second["answer_recall"]["mean"] == 0.5 and second["answer_contains"]["mean"] == 0.0
    # metrics with no answer to stand in have none
    assert results["llm_calls"]["floor"] is None and results["llm_calls"]["ceiling"] is None
    # the annotator kept everything: its precision is the retrieval's, so it is not reported as a filter's
    assert "annotation_precision" not in results
    assert any("the annotator filtered no source" in n for n in report["notices"])
    assert report["calibration"] is None and "correctness" not in results


def test_rouge_l_ceiling_by_hand_and_the_table_prints_floor_and_ceiling(
        fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = responder
    dataset = write_dataset(tmp_path / "mini")
    assert main([*flags(tmp_path, fake_ollama.url), "eval", "--answers", "--dataset", str(dataset), "--limit", "1",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # --limit 1 asks the first answerable question and the unanswerable ones in proportion (2 x 1/3, at least 1)
    assert [q["qid"] for q in report["questions"]] == ["q1", "u1"]
    assert report["results"]["rouge_l"]["ceiling"]["passage"]["mean"] == pytest.approx(10 / 16)
    assert report["results"]["rouge_l"]["floor"] is None        # no other answerable question to borrow from
    assert main([*flags(tmp_path, fake_ollama.url), "eval", "--answers", "--dataset", str(dataset)]) == 0
    out = capsys.readouterr().out
    assert "mini: 5 questions asked (3 answerable, 2 the corpus does not answer)" in out
    assert "| metric | mean [95% bootstrap CI] | questions | floor | ceiling: passage | ceiling: 2nd reference |" in out
    assert re.search(r"\| answer_contains \| [0-9.]+ \[[0-9.]+, [0-9.]+\] \| 3 \| 0\.000 \(n 3\) \| 1\.000 \(n 3\) \| "
                     r"0\.000 \(n 1\) \|", out)
    assert "abstained on 2 unanswerable question(s): 0.500 [" in out
    assert "abstained on 3 answerable question(s) (false abstention): 0.333 [" in out


def test_judge_grades_answers_and_stand_ins_and_reports_its_calibration(
        fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The judge grades the product's answers, the floor's and the ceilings' stand-ins, and first the calibration
    set: the fake's rule agrees with every right, wrong and abstained row and calls the 10 partly-right rows wrong:
    agreement 40/50; chance agreement (16*16 + 26*16 + 8*8) / 50^2 = 0.2944, kappa (0.8 - 0.2944) / 0.7056."""
    fake_ollama.add_model(Model("judge", "chat"))
    fake_ollama.responder = responder
    dataset = write_dataset(tmp_path / "mini")
    assert main([*flags(tmp_path, fake_ollama.url), "eval", "--answers", "--dataset", str(dataset), "--judge",
                 "judge", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    calibration = report["calibration"]
    assert calibration["set"] == "judge_calibration.jsonl" and calibration["rows"] == 50
    assert calibration["agreement"]["mean"] == pytest.approx(0.8)
    assert calibration["kappa"]["mean"] == pytest.approx((0.8 - 0.2944) / 0.7056)
    assert calibration["kappa"]["ci_low"] < calibration["kappa"]["mean"] < calibration["kappa"]["ci_high"]
    assert calibration["confusion"]["partly"] == {"wrong": 10} and calibration["confusion"]["right"] == {"right": 16}
    by_id = {q["qid"]: q for q in report["questions"]}
    assert by_id["q1"]["verdict"] == "right" and by_id["q1"]["reason"] == "it gives the reference"
    assert by_id["q3"]["verdict"] == "abstained" and by_id["u1"]["verdict"] == ""     # unanswerable: not graded
    correctness = report["results"]["correctness"]
    assert correctness["mean"] == pytest.approx(2 / 3) and correctness["n"] == 3
    assert correctness["floor"]["mean"] == 0.0 and correctness["ceiling"]["passage"]["mean"] == 1.0
    assert correctness["ceiling"]["second_reference"]["mean"] == 0.0      # "drag" is not "compressibility drag"
    graded = [c.body for c in fake_ollama.calls("/api/chat") if c.body["model"] == "judge"
              and "REFERENCE ANSWERS:" in str(c.body["messages"])]
    assert len(graded) == 50 + 3 + 3 + 3 + 1          # calibration, answers, floor, passage, second reference
    assert graded[0]["options"]["num_predict"] == 96
    assert main([*flags(tmp_path, fake_ollama.url), "eval", "--answers", "--dataset", str(dataset), "--limit", "1",
                 "--judge", "judge"]) == 0
    assert ("judge calibration (judge_calibration.jsonl, 50 labelled answers): agreement 0.800 ["
            in capsys.readouterr().out)
