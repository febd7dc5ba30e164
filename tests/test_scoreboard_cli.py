"""`ragtui eval --answers --models A B`: the same questions through two chat models with different habits, on two
fake servers over HTTP, through the CLI in a process of its own; one row per model, paired CIs between them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama
from tests.fake_openai import FakeOpenAI
from tests.test_answer_eval_cli import QUESTIONS, ollama_reader, write_dataset


def misattributes(body: dict[str, Any]) -> str:
    """Quotes the source sharing most words with the question, but cites the next source of the prompt; and adds a
    figure none of the sources holds, cited to that source too."""
    text = "\n".join(str(m.get("content", "")) for m in body["messages"])
    if "EXTRACT" in text:
        return "".join(ollama_reader(body).pieces)
    question = text.rsplit("QUESTION:", 1)[-1].split("\n", 1)[0]
    blocks = re.findall(r"(?ms)^\[(\d+)\] SOURCE:.*?^<<<\n(.*?)\n>>>$", text)
    words = set(re.findall(r"[a-z]{4,}", question.lower()))
    best = max(range(len(blocks)), key=lambda i: len(words & set(re.findall(r"[a-z]{4,}", blocks[i][1].lower()))))
    other = blocks[(best + 1) % len(blocks)][0]
    return f'"{blocks[best][1].strip()}" [{other}]. This holds in 87% of cases [{other}].'


def test_two_models_two_rows_and_paired_cis_over_the_same_questions(fake_ollama: FakeOllama,
                                                                     tmp_path: Path) -> None:
    fake_ollama.responder = ollama_reader            # `chat`: quotes the source it cites
    other = FakeOpenAI(models=("liar",)).start()     # `liar`, on an OpenAI-compatible server: cites the wrong one
    other.responder = misattributes
    try:
        dataset = write_dataset(tmp_path / "mini")
        run = cli(tmp_path, fake_ollama.url, "--set", "retrieve.min_similarity=0", "--set",
                  "annotation.enabled=false", "--set", "llm.api_key=sk-for-the-configured-server", "eval", "--answers",
                  "--dataset", str(dataset), "--models", "chat", f"liar@{other.url}", "--json")
        assert run.returncode == 0, run.stderr
        board = json.loads(run.stdout)
        liar = f"liar@{other.url}"
        assert board["kind"] == "scoreboard" and board["models"] == ["chat", liar]
        honest, lying = board["results"]["chat"], board["results"][liar]
        assert honest["quotes_verified"]["mean"] == 1.0 and honest["quotes_misattributed"]["mean"] == 0.0
        assert lying["quotes_verified"]["mean"] == 0.0 and lying["quotes_misattributed"]["mean"] == 1.0
        assert honest["numbers_unsupported"]["mean"] == 0.0 and lying["numbers_unsupported"]["mean"] == 1.0
        assert honest["citation_precision"]["mean"] == 1.0 and lying["citation_precision"]["mean"] == 0.0
        assert honest["no_citation"]["mean"] == lying["no_citation"]["mean"] == 0.0
        assert lying["tokens"]["n"] == 3 and lying["seconds"]["mean"] > 0
        # each model asked every question over HTTP: the honest one on Ollama, the other on its own server
        assert len(fake_ollama.calls("/api/chat")) == 3 and len(other.requests) >= 3
        # the configured key belongs to the configured server: another URL named on the command line never gets it
        assert other.authorizations and not any("sk-for" in a for a in other.authorizations)
        per_query = board["per_query"]
        assert set(per_query["chat"]) == set(per_query[liar]) == set(QUESTIONS)
        # paired over the same three questions: the difference is the same on each, so its CI is that one value
        diff = board["comparisons"][f"{liar} vs chat"]
        assert diff["quotes_misattributed"] == {"diff": 1.0, "ci_low": 1.0, "ci_high": 1.0, "b_wins": 1.0, "n": 3.0}
        assert diff["citation_precision"]["diff"] == -1.0 and diff["citation_precision"]["n"] == 3.0
        questions = {q["qid"]: q for q in board["questions"][liar]}
        assert questions["q1"]["quotes_misattributed"] == 1 and questions["q1"]["numbers_unsupported"] == 1

        table = cli(tmp_path, fake_ollama.url, "--set", "retrieve.min_similarity=0", "--set",
                    "annotation.enabled=false", "eval", "--answers", "--dataset", str(dataset), "--models", "chat",
                    f"liar@{other.url}", "--plot", "quotes_misattributed")
        assert table.returncode == 0, table.stderr
        row = next(line for line in table.stdout.splitlines() if line.startswith("| quotes_misattributed |"))
        assert row == ("| quotes_misattributed | 0.000 [0.000, 0.000] (n 3) | 1.000 [1.000, 1.000] (n 3) | "
                       "+1.000 [+1.000, +1.000]* |")
        assert f"| metric | chat | {liar} | {liar} vs chat |" in table.stdout
        assert "numbers_unsupported: 1 when a sentence of the answer states a number" in table.stdout
        # the fake Ollama reports its tokens, the fake OpenAI-compatible server does not: only those are estimates
        assert f"note: {liar}: tokens of 3 of 3 calls are estimates" in table.stdout
        assert "note: chat: tokens" not in table.stdout
        # --plot: a whisker per model, the honest one's mean at 0 and the other's at 1, left of it on the axis
        plot = table.stdout.split("note: only 3 queries", 1)[1].splitlines()
        marks = {name: next(line.index("●") for line in plot if name in line and "●" in line)
                 for name in ("chat", "liar@")}
        assert marks["chat"] < marks["liar@"]
    finally:
        other.stop()


def test_a_model_no_server_has_fails_before_the_ingest(fake_ollama: FakeOllama, tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "mini")
    run = cli(tmp_path, fake_ollama.url, "eval", "--answers", "--dataset", str(dataset), "--models", "chat",
              "nosuch")
    assert run.returncode != 0 and "nosuch" in run.stderr
    assert not fake_ollama.calls("/api/embed") and not fake_ollama.calls("/api/chat")
    for models, said in ((["chat"], "two models or more"), (["chat", "chat"], "the same model twice"),
                         (["chat", "x@ftp://h"], "expected MODEL or MODEL@http")):
        run = cli(tmp_path, fake_ollama.url, "eval", "--answers", "--dataset", str(dataset), "--models", *models)
        assert run.returncode == 2 and said in run.stderr
    run = cli(tmp_path, fake_ollama.url, "eval", "--dataset", str(dataset), "--models", "chat", "annotator")
    assert run.returncode == 2 and "--models goes with --answers" in run.stderr


def test_a_model_on_its_own_server_annotates_for_itself(fake_ollama: FakeOllama, tmp_path: Path) -> None:
    """`llm.annotation_model` pins an annotator of the configured server; a model named with another server is
    asked to annotate there as itself, and the table says so, not that the pinned one did."""
    fake_ollama.responder = ollama_reader
    other = FakeOpenAI(models=("liar",)).start()
    other.responder = misattributes
    try:
        dataset = write_dataset(tmp_path / "mini")
        run = cli(tmp_path, fake_ollama.url, "--set", "retrieve.min_similarity=0", "--set",
                  "llm.annotation_model=chat", "eval", "--answers", "--dataset", str(dataset), "--models", "chat",
                  f"liar@{other.url}", "--json")
        assert run.returncode == 0, run.stderr
        board = json.loads(run.stdout)
        assert board["annotators"] == {"chat": "chat", f"liar@{other.url}": "liar"}
        assert other.requests and {r["model"] for r in other.requests} == {"liar"}
    finally:
        other.stop()
