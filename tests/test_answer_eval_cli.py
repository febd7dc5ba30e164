"""`ragtui eval --answers` end to end: a crafted dataset ingested and every question asked through the fake
servers over HTTP, the report's figures computed by hand."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from ragtui.cli import main
from tests.fake_ollama import FakeOllama, Model, Reply, fenced
from tests.fake_openai import FakeOpenAI

DOCS = {"d1": ("Turbines", "Gas turbine blades are cooled by air bled from the compressor."),
        "d2": ("Wings", "Swept wings delay compressibility drag at high speed."),
        "d3": ("Boundary_layers", "Laminar boundary layers separate under adverse pressure gradients.")}
QUESTIONS = {"q1": ("What cools the gas turbine blades?", ["air bled from the compressor"], "d1"),
             "q2": ("What do swept wings delay?", ["compressibility drag", "drag"], "d2"),
             "q3": ("When do laminar boundary layers separate?", ["under adverse pressure gradients"], "d3")}


def write_dataset(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n"
                                                 for k, (t, x) in DOCS.items()))
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": k, "text": q, "metadata": {"answers": a}}) + "\n" for k, (q, a, _) in QUESTIONS.items()))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{k}\t{d}\t1\n" for k, (_, _, d) in QUESTIONS.items()))
    return folder


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


def reader(text: str) -> str:
    """The annotator drops the boundary-layer passage; the answer quotes the source sharing most words with the
    question, cited."""
    if "EXTRACT" in text:
        extract = fenced(text.split("EXTRACT:", 1)[-1])
        return "[IRRELEVANT!!!]" if "Laminar" in extract else f'"{extract}" This is relevant.'
    question = text.rsplit("QUESTION:", 1)[-1].split("\n", 1)[0]
    blocks = re.findall(r"(?ms)^\[(\d+)\] SOURCE:.*?^<<<\n(.*?)\n>>>$", text)
    number, best = max(blocks, key=lambda b: len(words(b[1]) & words(question)))
    return f'"{best.strip()}" [{number}]'


def ollama_reader(body: dict[str, Any]) -> Reply:
    return Reply.text(reader("\n".join(str(m.get("content", "")) for m in body.get("messages", []))))


def flags(tmp_path: Path, url: str) -> list[str]:
    return ["--config", os.devnull, "--data-dir", str(tmp_path / "data"), "--ollama-host", url,
            "--set", "synonyms.enabled=false", "--set", "llm.model=chat", "--set", "retrieve.min_similarity=0"]


def test_eval_answers_scores_annotation_answers_citations_and_cost(
        fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = ollama_reader
    dataset = write_dataset(tmp_path / "mini")
    assert main([*flags(tmp_path, fake_ollama.url), "eval", "--answers", "--dataset", str(dataset), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "answers" and report["queries"] == 3
    assert report["models"] == {"synthesis": "chat", "annotator": "chat", "embeddings": "nomic-embed-text"}
    by_id = {q["qid"]: q for q in report["questions"]}
    for q in by_id.values():     # every document retrieved for every question (three documents, no floor)
        assert len(q["retrieved"]) == 3 and not q["error"]
    per = report["per_query"]
    # q1: kept d1, d2 (d3 filtered); the answer quotes d1's chunk (title and text) whole and cites it.
    # F1: 11 answer tokens "turbines gas turbine blades are cooled by air bled from compressor", 4 reference
    # tokens "air bled from compressor", 4 shared: P = 4/11, R = 1, F1 = 2PR / (P + R) = 8/15
    assert per["q1"]["annotation_recall"] == 1.0 and per["q1"]["annotation_precision"] == 0.5
    assert per["q1"]["packed_recall"] == 1.0 and per["q1"]["packed_precision"] == 0.5
    assert per["q1"]["answer_f1"] == pytest.approx(8 / 15) and per["q1"]["answer_contains"] == 1.0
    assert per["q1"]["citation_precision"] == 1.0 and per["q1"]["citation_recall"] == 1.0
    assert per["q1"]["quotes_verified"] == 1.0 and per["q1"]["no_citation"] == 0.0
    # q2: best reference "compressibility drag": 9 answer tokens, 2 shared: P = 2/9, R = 1, F1 = 4/11
    # (the other reference, "drag", has F1 2/10)
    assert per["q2"]["answer_f1"] == pytest.approx(4 / 11) and per["q2"]["answer_contains"] == 1.0
    # q3: the relevant passage was filtered: recall 0 before and after packing, the answer cites another source
    assert per["q3"]["annotation_recall"] == 0.0 and per["q3"]["annotation_precision"] == 0.0
    assert per["q3"]["packed_recall"] == 0.0 and per["q3"]["citation_precision"] == 0.0
    assert per["q3"]["citation_recall"] == 0.0 and per["q3"]["answer_contains"] == 0.0
    # cost: three annotation calls and one answer per question; Ollama reports the tokens (the fake: 1 prompt
    # token per call, one output token per streamed piece)
    assert all(per[q]["llm_calls"] == 4.0 for q in per)
    assert by_id["q1"]["tokens_reported"] == 4 and per["q1"]["prompt_tokens"] == 4.0
    assert len(fake_ollama.calls("/api/chat")) == 12
    summary = report["results"]
    assert summary["answer_contains"]["mean"] == pytest.approx(2 / 3) and summary["answer_contains"]["n"] == 3
    assert summary["annotation_recall"]["mean"] == pytest.approx(2 / 3)
    assert "faithfulness" not in summary
    assert not (tmp_path / "data" / "history.sqlite3").exists()      # the user's history is untouched
    assert any("only 3 queries" in n for n in report["notices"])

    # the same run with annotation off: every source reaches the answer; compared by a paired bootstrap
    a = tmp_path / "on.json"
    a.write_text(json.dumps(report))
    assert main([*flags(tmp_path, fake_ollama.url), "--set", "annotation.enabled=false", "eval", "--answers",
                 "--dataset", str(dataset), "--json"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert off["per_query"]["q3"]["annotation_recall"] == 1.0 and off["per_query"]["q3"]["answer_contains"] == 1.0
    assert all(off["per_query"][q]["llm_calls"] == 1.0 for q in QUESTIONS) and off["models"]["annotator"] == "off"
    assert not any("annotator" in n for n in off["notices"])     # no annotator: nothing said of its filtering
    b = tmp_path / "off.json"
    b.write_text(json.dumps(off))
    assert main([*flags(tmp_path, fake_ollama.url), "eval", "--compare-runs", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "off.json vs on.json" in out and "| llm_calls | -3.0 [-3.0, -3.0]* | 3 |" in out
    assert "| answer_contains | +0.333 [" in out


def test_eval_answers_table_and_judge_through_an_openai_server(
        fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Chat on an OpenAI-compatible server that reports no token counts (they are estimated, and the table says
    so), and a judge: q1's one statement is supported, and the judge said so for each."""
    server = FakeOpenAI(models=("served-model", "judge-model")).start()
    try:
        judged: list[str] = []

        def respond(body: dict[str, Any]) -> str:
            text = "\n".join(str(m.get("content", "")) for m in body["messages"])
            if "STATEMENT:" in text:
                judged.append(text.rsplit("STATEMENT:", 1)[-1].split("\n", 1)[0].strip())
                return "YES"
            if "REFERENCE ANSWERS:" in text:
                return "RIGHT: it says what the reference says."
            return reader(text)

        server.responder = respond
        dataset = write_dataset(tmp_path / "mini")
        args = [*flags(tmp_path, fake_ollama.url), "--set", "llm.provider=openai", "--set",
                f"llm.base_url={server.url}", "--set", "llm.model=served-model", "eval", "--answers",
                "--dataset", str(dataset), "--limit", "1", "--judge", "judge-model"]
        assert main(args) == 0
        out = capsys.readouterr().out
        assert judged == ['"Turbines Gas turbine blades are cooled by air bled from the compressor."']
        assert "mini: 1 questions asked (1 answerable, 0 the corpus does not answer)" in out
        assert "judge judge-model" in out
        assert re.search(r"\| faithfulness \| 1\.000 \[1\.000, 1\.000\] \| 1 \|", out)
        assert "| llm_calls | 4.0 [4.0, 4.0] | 1 |" in out
        assert "note: tokens of 4 of 4 calls are estimates (characters / 3.5)" in out
        assert main([*flags(tmp_path, fake_ollama.url), "eval", "--dataset", str(dataset), "--judge", "x"]) == 2
        assert "--judge goes with --answers" in capsys.readouterr().err
    finally:
        server.stop()


def test_eval_answers_needs_reference_answers(fake_ollama: FakeOllama, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_dataset(tmp_path / "mini")
    (dataset / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": q, "metadata": {"answers": [7]}})
                                                   + "\n" for k, (q, _, _) in QUESTIONS.items()))
    assert main([*flags(tmp_path, fake_ollama.url), "eval", "--answers", "--dataset", str(dataset)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no judged query carries reference answers" in err


@pytest.mark.parametrize(("extra", "named"), [
    (["--answers", "--from-history"], "--answers asks a dataset's questions: it takes --dataset DIR, not "
                                      "--from-history"),
    (["--answers", "--from-history", "--judge", "chat"], "not --from-history"),
    (["--answers", "--dataset", "{dataset}", "--modes", "hybrid"], "it takes no --modes"),
    (["--answers", "--dataset", "{dataset}", "--compare", "keyword", "hybrid"], "it takes no --compare"),
    (["--answers", "--dataset", "{dataset}", "--sources", "--concurrency", "2"], "it takes no --sources, "
                                                                                  "--concurrency"),
    (["--dataset", "{dataset}", "--weak"], "--weak goes with --from-history"),
])
def test_eval_refuses_flags_the_run_would_ignore(extra: list[str], named: str, fake_ollama: FakeOllama,
                                                 tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A flag the chosen run would not use is one usage error before anything runs, not a run without it."""
    dataset = write_dataset(tmp_path / "mini")
    args = [a.replace("{dataset}", str(dataset)) for a in extra]
    assert main([*flags(tmp_path, fake_ollama.url), "eval", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err
    assert not fake_ollama.calls("/api/embed") and not fake_ollama.calls("/api/chat")


def test_eval_answers_judge_missing_fails_before_the_ingest(fake_ollama: FakeOllama, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A --judge model the server does not have is one error before a single document is embedded."""
    dataset = write_dataset(tmp_path / "mini")
    assert main([*flags(tmp_path, fake_ollama.url), "eval", "--answers", "--dataset", str(dataset),
                 "--judge", "jduge"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"ragtui: eval failed: model 'jduge' is not available at {fake_ollama.url}: run `ollama " \
                      "pull jduge`"
    assert not fake_ollama.calls("/api/embed") and not fake_ollama.calls("/api/chat")


def test_eval_answers_judge_prompt_is_cut_to_its_window(fake_ollama: FakeOllama, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A cited source longer than the judge's 600-token window is shortened to fit it (with 16 tokens of reply,
    all the judge needs for YES or NO), and the report says how many judge prompts were cut."""
    from ragtui.tokens import estimate_tokens

    fake_ollama.add_model(Model("judge", "chat", context_length=600))
    long = "Gas turbine blades are cooled by air bled from the compressor. " + " ".join(
        f"Paragraph {i} describes the turbine casing at length." for i in range(60))
    dataset = write_dataset(tmp_path / "mini")
    (dataset / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": k, "title": t, "text": long if k == "d1" else x}) + "\n" for k, (t, x) in DOCS.items()))

    def respond(body: dict[str, Any]) -> Reply:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        if "REFERENCE ANSWERS:" in text:
            return Reply.text("RIGHT")
        return Reply.text("YES") if "STATEMENT:" in text else Reply.text(reader(text))

    fake_ollama.responder = respond
    assert main([*flags(tmp_path, fake_ollama.url), "--set", "chunk.size_tokens=2000", "--set",
                 "annotation.enabled=false", "eval", "--answers", "--dataset", str(dataset), "--limit", "1",
                 "--judge", "judge", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    judged = [c.body for c in fake_ollama.calls("/api/chat") if c.body["model"] == "judge"
              and "STATEMENT:" in str(c.body["messages"])]
    assert len(judged) == 1 and len(long) > 600 * 3.5
    prompt = "".join(str(m["content"]) for m in judged[0]["messages"])
    assert estimate_tokens(prompt) + 16 <= 600 and "Gas turbine blades are cooled" in prompt and " …" in prompt
    assert judged[0]["options"]["num_predict"] == 16 and judged[0]["options"]["num_ctx"] == 600
    # the answer quotes the whole chunk: 61 sentences, the last one citing it (and judged supported)
    assert report["models"]["judge"] == "judge" and report["per_query"]["q1"]["faithfulness"] == pytest.approx(1 / 61)
    assert any(n.startswith("1 judge prompt(s) were cut to fit judge's 600-token window") for n in report["notices"])
    # the correctness grades fit the window too (96 tokens of reply): the answer and the passage ceiling's stand-in
    # (the long passage itself) are cut, and so is any calibration answer too long for this small window (one
    # question asked: no other to borrow a floor from, and one reference); the report counts them
    graded = [c.body for c in fake_ollama.calls("/api/chat") if "REFERENCE ANSWERS:" in str(c.body["messages"])]
    assert len(graded) == 50 + 1 + 1 and all(
        estimate_tokens("".join(str(m["content"]) for m in g["messages"])) + 96 <= 600 for g in graded)
    cut = [g for g in graded if " …\n>>>" in str(g["messages"][-1]["content"])]
    assert not any("Paragraph 59" in str(g["messages"]) for g in graded)      # the long answer's tail was cut
    assert len(cut) >= 2 and f"{len(cut)} answer(s) were cut to fit the judge's window before grading" in \
        report["notices"]


def test_eval_answers_judge_missing_from_an_openai_server_fails_before_the_ingest(
        fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With the OpenAI-compatible provider too, a misspelt --judge model is one error naming what the server
    serves (its /v1/models), before a single document is embedded or a question asked."""
    server = FakeOpenAI(models=("served-model", "judge-model")).start()
    try:
        dataset = write_dataset(tmp_path / "mini")
        assert main([*flags(tmp_path, fake_ollama.url), "--set", "llm.provider=openai", "--set",
                     f"llm.base_url={server.url}", "--set", "llm.model=served-model", "eval", "--answers",
                     "--dataset", str(dataset), "--judge", "jduge-model"]) == 1
        err = capsys.readouterr().err.splitlines()
        assert err[-1] == (f"ragtui: eval failed: model 'jduge-model' is not served at {server.url}; it serves: "
                           "served-model, judge-model (check --judge against the server's /models)")
        assert not fake_ollama.calls("/api/embed") and not server.requests
    finally:
        server.stop()


@pytest.mark.parametrize("habit", ["echoes_source_header", "lists_source_numbers"])
def test_an_echo_of_the_prompt_or_a_non_answer_scores_as_uncited(
        fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str], habit: str) -> None:
    """The answer copies the prompt's first source header (its "[N]" counted as a citation, it scored citation
    precision 1.0 when that source was the judged one), or names the three sources and says nothing: each
    question scores citation precision 0, recall 0 and no citation."""
    from tests import model_habits

    fake_ollama.responder = model_habits.as_reply(getattr(model_habits, habit))
    dataset = write_dataset(tmp_path / "mini")
    assert main([*flags(tmp_path, fake_ollama.url), "eval", "--answers", "--dataset", str(dataset), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert all(q["claimless"] and bool(q["cited"]) is (habit == "lists_source_numbers") for q in report["questions"])
    for scores in report["per_query"].values():
        assert (scores["citation_precision"], scores["citation_recall"], scores["no_citation"]) == (0.0, 0.0, 1.0)
    assert report["results"]["citation_precision"]["mean"] == 0.0
