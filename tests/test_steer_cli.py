"""Steering a saved session from the CLI: follow-ups, re-annotation by model or prompt, rescue, drop, re-synthesis.

Retrieval is injected (StaticRetrieval); every LLM call goes over HTTP to the fake Ollama.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragtui.cli import main
from ragtui.history import HistoryStore
from tests.fake_ollama import FakeOllama, Reply
from tests.research.test_session import TEXTS, annotator
from tests.research_helpers import StaticRetrieval
from tests.test_ask_cli import flags


@pytest.fixture
def retrieval(monkeypatch: pytest.MonkeyPatch) -> StaticRetrieval:
    fake = StaticRetrieval(TEXTS)
    monkeypatch.setattr("ragtui.workspace.Workspace.retrieve", fake)
    return fake


def respond(body: dict[str, Any]) -> Reply:
    """Annotations as in tests/research/test_session.py; the rewrite of a follow-up; answers citing every source
    they were given."""
    last = body["messages"][-1]["content"]
    if last.endswith("Standalone question:"):
        return Reply.text("How long do centrifugal pump seals last?")
    if "Be generous" in last:
        return Reply.text('"menu changes on Mondays" matters for lunch.')
    found = annotator(body)
    if found is not None:
        return found
    numbers = sorted(int(line[1:].split("]", 1)[0]) for line in last.splitlines() if line.startswith("["))
    return Reply.text("Answer " + "".join(f"[{n}]" for n in numbers) + ".")


def test_reannotate_rescue_drop_resynthesize_and_follow_up(fake_ollama: FakeOllama, retrieval: StaticRetrieval,
                                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = respond
    base = flags(tmp_path, fake_ollama.url)
    store = HistoryStore(tmp_path / "data")
    assert main([*base, "ask", "How do pumps start?", "-c", "docs"]) == 0
    out = capsys.readouterr().out
    assert "[1] relevant (by chat with the default prompt):" in out and "Answer [1][3][4]." in out

    # source 2 (the cafeteria) again, with a second model and a generous prompt: recorded per source
    prompt = tmp_path / "generous.txt"
    prompt.write_text("Be generous. QUERY -- CONTENT")
    fake_ollama.requests.clear()
    assert main([*base, "history", "reannotate", "1", "--model", "annotator", "--prompt-file", str(prompt),
                 "--source", "2"]) == 0
    out = capsys.readouterr().out
    assert f"[2] relevant (by annotator with {prompt}): " in out and "--resynthesize --session 1" in out
    (call,) = fake_ollama.calls("/api/chat")
    assert call.body["model"] == "annotator"
    sources = store.load(1).all_sources
    assert [(s.annotated_by, s.annotation_prompt) for s in sources[:2]] == [("chat", ""), ("annotator", str(prompt))]
    assert sources[1].relevant
    assert main([*base, "history", "show", "1"]) == 0
    assert f"   > annotated by annotator with {prompt}:" in capsys.readouterr().out

    # drop [1], rescue nothing-to-rescue, then answer again from the new Relevant set
    assert main([*base, "history", "drop", "1", "1"]) == 0
    assert "[1] docs/file1.md [p.1] is now out of the synthesis set of session 1" in capsys.readouterr().out
    assert main([*base, "history", "drop", "1", "2"]) == 0
    assert main([*base, "history", "rescue", "1", "2"]) == 0
    assert "is now in the synthesis set" in capsys.readouterr().out
    assert main([*base, "history", "drop", "1", "9"]) == 2
    assert "session 1: no source [9] in this session (its sources: [1]-[4])" in capsys.readouterr().err
    assert main([*base, "ask", "--resynthesize", "--session", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["answer"] == "Answer [2][3][4]." and data["citations"] == [2, 3, 4]
    assert store.load(1).turn.prompt_numbers == (2, 3, 4)

    # a follow-up turn on the latest session: rewritten, retrieved on both, numbered on from [5]
    assert main([*base, "ask", "--follow-up", "And its seals?", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["query"] for t in data["turns"]] == ["How do pumps start?", "And its seals?"]
    assert data["turn"] == 2 and data["rewrite"] == "How long do centrifugal pump seals last?"
    assert data["sources"][0]["number"] == 5 and data["context_turns"] == [1]
    assert retrieval.calls[-2:] == [("And its seals?", ("docs",)),
                                    ("How long do centrifugal pump seals last?", ("docs",))]
    assert main([*base, "ask", "--follow-up", "And valves?", "--rewrite", "check valve", "--session", "1"]) == 0
    assert retrieval.calls[-1] == ("check valve", ("docs",))
    assert main([*base, "history", "list"]) == 0
    assert "3 turns" in capsys.readouterr().out


def test_steering_usage_errors(fake_ollama: FakeOllama, retrieval: StaticRetrieval, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    base = flags(tmp_path, fake_ollama.url)
    assert main([*base, "ask", "--follow-up", "more?"]) == 1
    assert "no session in the history yet" in capsys.readouterr().err
    assert main([*base, "ask", "q", "--resynthesize"]) == 2
    assert main([*base, "ask", "--continue", "--resynthesize"]) == 2
    assert main([*base, "ask", "q", "--rewrite", "x"]) == 2
    assert main([*base, "history", "reannotate", "1", "--prompt-file", str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt" in capsys.readouterr().err
