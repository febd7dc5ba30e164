"""`ragtui research` end to end through the CLI entry point, every model call over HTTP to the fake Ollama server
(tests/research_run_fakes.py answers the plan, the gap check, the annotations and the report); the retrieval
stage is injected, as in the `ask` tests. Then the run's history: reopened, resynthesized, exported."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ragtui.cli import main
from ragtui.history import HistoryStore
from tests.fake_ollama import FakeOllama
from tests.research_run_fakes import QUESTION, ResearchModel, WordRetrieval


def flags(tmp_path: Path, host: str, *extra: str) -> list[str]:
    return ["--config", os.devnull, "--data-dir", str(tmp_path / "data"), "--ollama-host", host,
            "--set", "llm.model=chat", *extra]


@pytest.fixture
def retrieval(monkeypatch: pytest.MonkeyPatch) -> WordRetrieval:
    fake = WordRetrieval()
    monkeypatch.setattr("ragtui.workspace.Workspace.retrieve", fake)
    return fake


def research(tmp_path: Path, fake: FakeOllama, capsys: pytest.CaptureFixture[str], *args: str,
             sets: tuple[str, ...] = (), code: int = 0) -> tuple[dict[str, Any], str]:
    settings = [arg for setting in sets for arg in ("--set", setting)]
    assert main([*flags(tmp_path, fake.url, *settings), "research", QUESTION, "-c", "docs", "--json", *args]) == code
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_plan_gather_gap_round_and_report(fake_ollama: FakeOllama, retrieval: WordRetrieval, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    model = ResearchModel(gaps=lambda n: "3: default base and default tics" if n == 1 else "NONE")
    fake_ollama.responder = model
    fake_ollama.prompt_eval_count = 100
    data, err = research(tmp_path, fake_ollama, capsys)
    assert [p["text"] for p in data["plan"]] == ["How does R draw a log scale axis?",
                                                 "How does gnuplot set a log scale?",
                                                 "Which log scale defaults differ?"]
    assert data["planned_by"] == "chat" and data["rounds"] == 2 and data["limits_hit"] == []
    # round 1: each sub-question as planned; round 2: the gap check's new search for sub-question 3
    assert retrieval.calls == [p["text"] for p in data["plan"]] + ["default base and default tics"]
    assert [s["part"] for s in data["searches"]] == [1, 2, 3, 3]
    # the second search for part 3 skipped [4]'s chunk (already kept for part 2) and kept the new one
    by_number = {s["number"]: s for s in data["sources"]}
    assert [(s["source"], s["part"]) for s in data["sources"]] == [
        ("file1.md", 1), ("file2.md", 1), ("file3.md", 2), ("file4.md", 2), ("file6.md", 3)]
    assert data["plan"][2]["kept_sources"] == [5] and by_number[5]["chunk_id"] == "chunk-6"
    assert data["plan"][0]["state"] == "done" and data["plan"][0]["kept"] == 2
    assert data["kept"] == [1, 2, 3, 4, 5]
    # the report: one synthesis over every kept source, organised by the plan's parts, citing across the run
    assert sorted(data["citations"]) == [1, 2, 3, 4, 5] and data["unknown_citations"] == []
    assert "THE QUESTION HAS THESE PARTS" in model.reports[-1] and "3. Which log scale defaults differ?" in \
        model.reports[-1]
    # calls: the plan, 5 annotations, 2 gap checks (the second says NONE), the report; tokens as the server says
    assert data["model_calls"] == 9 == len(fake_ollama.calls("/api/chat"))
    assert 9 * 100 < data["tokens"] < 9 * 100 + 300
    assert data["seconds"] > 0 and data["session"] == 1
    assert "research run: 3 sub-question(s), 2 round(s), 8 model calls" not in err     # --json: quiet


def test_text_output_shows_plan_progress_and_cost(fake_ollama: FakeOllama, retrieval: WordRetrieval,
                                                  tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = ResearchModel()
    assert main([*flags(tmp_path, fake_ollama.url), "research", QUESTION, "-c", "docs"]) == 0
    out, err = capsys.readouterr()
    assert "Plan (chat):\n  1. How does R draw a log scale axis?\n" in out
    assert "  sub-question 1: done, 2 source(s) kept" in out
    assert "  sub-question 3: done, 0 source(s) kept" in out
    assert out.index("sub-question 3: done") < out.index("Answer (chat, from 4 source(s)")
    assert "research run: 3 sub-question(s), 1 round(s), 7 model calls" in err and "session 1" in err


def test_junk_plan_falls_back_to_the_question_s_fragments(fake_ollama: FakeOllama, retrieval: WordRetrieval,
                                                          tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = ResearchModel(plan="\x1b[31mI'm sorry, I cannot help with that.")
    question = "How does R label a log axis? How does gnuplot set logscale"
    assert main([*flags(tmp_path, fake_ollama.url), "research", question, "-c", "docs", "--json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["planned_by"] == "fragments"
    assert [p["text"] for p in data["plan"]] == ["How does R label a log axis?", "How does gnuplot set logscale"]
    assert [n for n in data["notices"] if "plan" in n] == [
        "the model's plan was not used (it reads as a refusal, not a question); searching the question's parts as "
        "typed"]
    assert "\x1b" not in err + out
    assert data["report"] and data["kept"]


def test_a_model_that_always_asks_for_more_is_bounded_by_max_rounds(
        fake_ollama: FakeOllama, retrieval: WordRetrieval, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    retrieval.texts += [f"gnuplot note {name}: tics vary by terminal." for name in names]
    model = ResearchModel(gaps=lambda n: f"2: gnuplot note {names[n]}\n1: more about R")   # always a new note
    fake_ollama.responder = model
    data, _ = research(tmp_path, fake_ollama, capsys, "--max-rounds", "2")
    assert data["rounds"] == 3 and model.gap_checks == 2     # the first round and two more, never a third
    assert data["report"] and data["stop_reason"] == "stop"


def test_a_round_that_finds_nothing_new_ends_the_gathering(fake_ollama: FakeOllama, retrieval: WordRetrieval,
                                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = ResearchModel(gaps=lambda n: "1: How does R draw a log scale axis on plots")   # the same sources
    fake_ollama.responder = model
    data, _ = research(tmp_path, fake_ollama, capsys, "--max-rounds", "5")
    assert data["rounds"] == 2 and model.gap_checks == 1
    assert "'How does R draw a log scale axis on plots' found only sources this session already has" in \
        data["notices"]


def test_junk_gap_reply_searches_again_what_kept_nothing(fake_ollama: FakeOllama, retrieval: WordRetrieval,
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = ResearchModel(gaps=lambda n: "Everything looks fine to me!")
    data, _ = research(tmp_path, fake_ollama, capsys, "--max-rounds", "1")
    assert ("the gap check's reply was not used (it named no sub-question and did not say NONE); searching again "
            "the sub-questions that kept nothing: 3") in data["notices"]
    assert retrieval.calls[-1] == "Which log scale defaults differ?" and data["rounds"] == 2


@pytest.mark.parametrize(("setting", "limit"), [("research.max_model_calls=4", "model calls"),
                                                 ("research.max_tokens=1000", "tokens"),
                                                 ("research.max_seconds=4", "seconds")])
def test_each_limit_stops_the_gathering_once_and_the_report_is_written(
        fake_ollama: FakeOllama, retrieval: WordRetrieval, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        setting: str, limit: str) -> None:
    slow = "gnuplot" if limit == "seconds" else ""
    fake_ollama.responder = ResearchModel(gaps=lambda n: "3: default base", slow=slow)
    fake_ollama.prompt_eval_count = 300
    data, err = research(tmp_path, fake_ollama, capsys, sets=(setting,))
    assert data["limits_hit"] == [limit]
    assert err.count(f"the run reached its limit of {limit}") == 1
    assert "reached its limit" not in " ".join(data["notices"])
    assert data["report"] and data["citations"]
    assert "skipped" in [p["state"] for p in data["plan"]] or limit == "seconds"
    if limit == "model calls":
        assert data["model_calls"] == len(fake_ollama.calls("/api/chat")) == 4    # the plan, 2 annotations, report
    if limit == "seconds":        # the slow annotations of sub-question 2 were cut at the limit, not waited for
        assert data["seconds"] < 10 and [p["state"] for p in data["plan"]] == ["done", "cut", "skipped"]
        assert data["plan"][1]["kept"] == 0 and sorted(data["citations"]) == [1, 2]


def test_the_run_is_saved_reopened_resynthesized_and_exported(
        fake_ollama: FakeOllama, retrieval: WordRetrieval, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = ResearchModel()
    data, _ = research(tmp_path, fake_ollama, capsys)
    stored = HistoryStore(tmp_path / "data").load(data["session"])
    assert stored.research is not None and stored.query == QUESTION
    assert [s.kept for s in stored.research.plan] == [2, 2, 0] and stored.research.cost.model_calls == 7
    assert HistoryStore(tmp_path / "data").list_sessions()[0].query == QUESTION
    # drop [1] and write the report again: the reopened run's report is from the kept sources still
    assert main([*flags(tmp_path, fake_ollama.url), "history", "drop", "1", "1"]) == 0
    assert main([*flags(tmp_path, fake_ollama.url), "ask", "--resynthesize", "--session", "1", "--json"]) == 0
    again = json.loads(_last_json(capsys))
    assert sorted(again["citations"]) == [2, 3, 4]
    assert main([*flags(tmp_path, fake_ollama.url), "history", "export", "1"]) == 0
    markdown = capsys.readouterr().out
    assert "## Research plan" in markdown
    assert "1. How does R draw a log scale axis? — done, 2 source(s) kept" in markdown
    assert "_The report is written from the kept sources of the searches above._" in markdown
    assert main([*flags(tmp_path, fake_ollama.url), "history", "export", "1", "--format", "csl-json"]) == 0
    cited = json.loads(capsys.readouterr().out)
    assert len(cited["items"]) == 3          # file2, file3, file4: the documents the report cites
    # bundled like any other session: the plan travels with it, and the bundle verifies offline
    out = tmp_path / "run.bundle.json"
    assert main([*flags(tmp_path, fake_ollama.url), "history", "bundle", "1", "-o", str(out)]) == 0
    bundled = json.loads(out.read_text())["content"]["research"]
    assert bundled["question"] == QUESTION and [s["kept"] for s in bundled["plan"]] == [2, 2, 0]
    capsys.readouterr()
    assert main(["--config", os.devnull, "--data-dir", str(tmp_path / "elsewhere"), "verify", str(out)]) == 0
    assert "verified: every hash and every check holds" in capsys.readouterr().out


def _last_json(capsys: pytest.CaptureFixture[str]) -> str:
    out = capsys.readouterr().out
    return out[out.index("{"):]


def test_a_reopened_run_keeps_its_filter(fake_ollama: FakeOllama, retrieval: WordRetrieval, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = ResearchModel()
    research(tmp_path, fake_ollama, capsys, "-f", "path:*.md")
    assert {tuple(f.chips()) for f in retrieval.filters if f is not None} == {("path:*.md",)}
    assert main([*flags(tmp_path, fake_ollama.url), "ask", "--follow-up", "and gnuplot tics?", "--session", "1",
                 "--json"]) == 0
    assert retrieval.filters[-1] is not None and retrieval.filters[-1].chips() == ["path:*.md"]


def test_reannotating_a_run_reannotates_every_search_s_sources(fake_ollama: FakeOllama, retrieval: WordRetrieval,
                                                              tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = ResearchModel()
    data, _ = research(tmp_path, fake_ollama, capsys)
    before = len(fake_ollama.calls("/api/chat"))
    assert main([*flags(tmp_path, fake_ollama.url), "history", "reannotate", "1"]) == 0
    assert len(fake_ollama.calls("/api/chat")) - before == len(data["sources"]) == 4


def test_a_plan_that_answers_instead_of_splitting_falls_back(fake_ollama: FakeOllama, retrieval: WordRetrieval,
                                                             tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """SmolLM2-135M's habit: a heading, then statements about the question's words."""
    rambling = ("The R and gnuplot log scales handled are:\n" + "\n".join(
        "The gnuplot manual (Graphing Utility for Log Scales) is a program that handles log scales for users "
        f"across various devices and platforms in a secure, scalable and efficient way, version {i}."
        for i in range(3)))
    fake_ollama.responder = ResearchModel(plan=rambling)
    question = "How does R label a log axis? How does gnuplot set logscale"
    assert main([*flags(tmp_path, fake_ollama.url), "research", question, "-c", "docs", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["planned_by"] == "fragments"
    assert ("the model's plan was not used (its lines read as answers or headings, not sub-questions); searching "
            "the question's parts as typed") in data["notices"]


def test_without_annotation_every_source_found_is_kept(fake_ollama: FakeOllama, retrieval: WordRetrieval,
                                                       tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = ResearchModel()
    fake_ollama.responder = model
    data, _ = research(tmp_path, fake_ollama, capsys, "--no-annotate")
    assert data["kept"] == [1, 2, 3, 4] and {s["state"] for s in data["sources"]} == {"off"}
    assert data["model_calls"] == 3 == len(fake_ollama.calls("/api/chat"))     # the plan, a gap check, the report
