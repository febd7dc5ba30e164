"""`ragtui ask` and `ragtui history` through the CLI entry point; the retrieval stage is injected."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ragtui.cli import main
from ragtui.history import HistoryStore
from tests.fake_ollama import FakeOllama, Reply
from tests.research.test_session import TEXTS, annotator, responder
from tests.research_helpers import StaticRetrieval
from tests.signals import default_sigint


def flags(tmp_path: Path, host: str, *extra: str) -> list[str]:
    return ["--config", os.devnull, "--data-dir", str(tmp_path / "data"), "--ollama-host", host,
            "--set", "llm.model=chat", *extra]


@pytest.fixture
def retrieval(monkeypatch: pytest.MonkeyPatch) -> StaticRetrieval:
    fake = StaticRetrieval(TEXTS)
    monkeypatch.setattr("ragtui.workspace.Workspace.retrieve", fake)
    return fake


def test_ask_prints_sources_annotations_then_the_answer(fake_ollama: FakeOllama, retrieval: StaticRetrieval,
                                                        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = responder(Reply.text("Pumps start at 3 bar [1]."))
    assert main([*flags(tmp_path, fake_ollama.url), "ask", "How do pumps start?", "-c", "docs", "-c", "notes"]) == 0
    out, err = capsys.readouterr()
    assert retrieval.calls == [("How do pumps start?", ("docs", "notes"))]
    assert "  [1] docs/file1.md [p.1]  score 0.990  vector+keyword" in out
    assert "  [2] filtered (by chat with the default prompt): [IRRELEVANT!!!]" in out
    assert ('  [1] relevant (by chat with the default prompt): "Centrifugal pumps start at 3 bar." This is relevant '
            'to the question.') in out
    answer_at = out.index("Answer (chat, from 3 source(s): [1] [3] [4])")
    assert out.index("[4] docs/file4.md") < out.index("relevant (") < answer_at
    assert out.rstrip().endswith("Pumps start at 3 bar [1].\n\nCited: [1]")
    assert "session 1 saved" in err


def test_ask_json(fake_ollama: FakeOllama, retrieval: StaticRetrieval, tmp_path: Path,
                  capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = responder(Reply.text("Pumps start at 3 bar [1][8]."))
    assert main([*flags(tmp_path, fake_ollama.url), "ask", "How do pumps start?", "-c", "docs", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["answer"] == "Pumps start at 3 bar [1][8]." and data["stop_reason"] == "stop"
    assert data["citations"] == [1, 8] and data["unknown_citations"] == [8]
    assert [s["relevant"] for s in data["sources"]] == [True, False, True, True]
    assert data["sources"][1]["state"] == "irrelevant" and data["session"] == 1


def test_ask_no_annotate(fake_ollama: FakeOllama, retrieval: StaticRetrieval, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = lambda body: Reply.text("All [1][2][3][4].")
    assert main([*flags(tmp_path, fake_ollama.url), "ask", "q", "-c", "docs", "--no-annotate"]) == 0
    assert len(fake_ollama.calls("/api/chat")) == 1
    assert "from 4 source(s)" in capsys.readouterr().out


def test_ask_unreachable_ollama_is_one_line_and_exit_1(retrieval: StaticRetrieval, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, "http://127.0.0.1:9"), "ask", "q", "-c", "docs"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "http://127.0.0.1:9" in err and "not reachable" in err


def test_ask_missing_model_gives_the_pull_hint(fake_ollama: FakeOllama, retrieval: StaticRetrieval, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama.url, "--set", "llm.annotation_model=tiny:1b"), "ask", "q",
                 "-c", "docs"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ollama pull tiny:1b" in err and fake_ollama.url in err


def test_ask_without_model_or_with_a_bad_prompt_file_is_a_config_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--config", os.devnull, "--data-dir", str(tmp_path / "data")]
    assert main([*base, "ask", "q", "-c", "docs"]) == 2
    assert "llm.model" in capsys.readouterr().err
    assert main([*base, "--set", "llm.model=chat", "--set", f"annotation.prompt_file={tmp_path / 'x.txt'}",
                 "ask", "q", "-c", "docs"]) == 2
    err = capsys.readouterr().err
    assert "annotation.prompt_file" in err and "x.txt" in err


def test_ask_without_collections_says_to_ingest(fake_ollama: FakeOllama, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama.url), "ask", "q"]) == 1
    assert "ragtui ingest" in capsys.readouterr().err


def test_retrieval_errors_are_one_line(fake_ollama: FakeOllama, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from ragtui.library import CollectionError

    async def failing(*args: Any, **kwargs: Any) -> None:
        raise CollectionError("no collection 'nope'; `ragtui collections list` shows them")

    monkeypatch.setattr("ragtui.workspace.Workspace.retrieve", failing)
    assert main([*flags(tmp_path, fake_ollama.url), "ask", "q", "-c", "nope"]) == 1
    assert capsys.readouterr().err == "ragtui: retrieve failed: no collection 'nope'; `ragtui collections list` " \
                                      "shows them\n"


def test_ask_continue(fake_ollama: FakeOllama, retrieval: StaticRetrieval, tmp_path: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    base = flags(tmp_path, fake_ollama.url, "--set", "annotation.enabled=false")
    assert main([*base, "ask", "--continue"]) == 1
    assert "no answer to continue" in capsys.readouterr().err
    fake_ollama.script(Reply.text("Pumps start at", done_reason="length"))
    assert main([*base, "ask", "How do pumps start?", "-c", "docs"]) == 0
    assert "ragtui ask --continue" in capsys.readouterr().err
    fake_ollama.script(Reply.text("start at 3 bar [1]."))
    assert main([*base, "ask", "--continue"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Pumps start at 3 bar [1].\n")
    assert HistoryStore(tmp_path / "data").load(1).turn.answer == "Pumps start at 3 bar [1]."
    assert main([*base, "ask", "--continue", "--session", "1"]) == 1
    assert "the answer is complete: nothing to continue" in capsys.readouterr().err


def test_history_commands(fake_ollama: FakeOllama, retrieval: StaticRetrieval, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    base = flags(tmp_path, fake_ollama.url)
    assert main([*base, "history", "list"]) == 0
    assert "No sessions yet" in capsys.readouterr().out
    fake_ollama.responder = responder(Reply.text("Pumps start at 3 bar [1]."))
    assert main([*base, "ask", "How do pumps start?", "-c", "docs"]) == 0
    capsys.readouterr()
    assert main([*base, "history", "list"]) == 0
    listing = capsys.readouterr().out
    assert "How do pumps start?" in listing and "stop" in listing and "3/4" in listing
    assert main([*base, "history", "show", "1"]) == 0
    assert capsys.readouterr().out.startswith("# How do pumps start?")
    target = tmp_path / "out.md"
    assert main([*base, "history", "export", "1", "-o", str(target)]) == 0
    assert "1. **docs/file1.md [p.1]**" in target.read_text()
    assert main([*base, "history", "delete", "1"]) == 0
    assert main([*base, "history", "delete", "1"]) == 1
    assert "no session 1" in capsys.readouterr().err


CTRL_C_SCRIPT = textwrap.dedent("""
    import sys
    from ragtui.cli import main
    from ragtui.workspace import Workspace
    from tests.research_helpers import StaticRetrieval
    from tests.research.test_session import TEXTS
    Workspace.retrieve = StaticRetrieval(TEXTS)
    sys.exit(main(sys.argv[1:]))
""")


def test_ctrl_c_during_ask_leaves_a_consistent_record(fake_ollama: FakeOllama, tmp_path: Path) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        return annotator(body) or Reply(pieces=[f"w{i} " for i in range(500)], delay=0.02)

    fake_ollama.responder = respond
    proc = subprocess.Popen([sys.executable, "-c", CTRL_C_SCRIPT, *flags(tmp_path, fake_ollama.url), "ask", "q",
                             "-c", "docs"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=Path(__file__).resolve().parents[1], preexec_fn=default_sigint)
    assert proc.stdout is not None
    seen = b""
    while b"w3 " not in seen:
        piece = os.read(proc.stdout.fileno(), 4096)
        assert piece, proc.stderr.read().decode() if proc.stderr else ""
        seen += piece
    proc.send_signal(signal.SIGINT)
    seen += proc.stdout.read()
    assert proc.wait(timeout=60) == 130
    said = proc.stderr.read().decode()
    assert "interrupted; session 1 kept with stop reason 'cancelled'" in said
    assert "`ragtui ask --continue --session 1` goes on" in said         # a cancelled answer continues
    record = HistoryStore(tmp_path / "data").load(1)
    assert record.turn.stop_reason == "cancelled"
    shown = seen.decode().split("[4]):\n\n", 1)[1]
    assert record.turn.answer.startswith("w0 w1 w2 w3 ") and shown.startswith(record.turn.answer)
    assert [s.state.value for s in record.all_sources] == ["relevant", "irrelevant", "relevant", "relevant"]


def test_ask_says_which_sources_went_into_the_answer(fake_ollama: FakeOllama, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    texts = ["Pumps start at 3 bar. " * 100,                       # ~2,200 chars: fits whole
             "Unrelated filler here. " * 400 + "Pumps start slowly when cold. ",   # ~9,200: its best window
             "Pumps prime first. " * 60]                           # no room left for even a window
    monkeypatch.setattr("ragtui.workspace.Workspace.retrieve", StaticRetrieval(texts))
    fake_ollama.responder = responder(Reply.text("Pumps start at 3 bar [1]."))
    # budget 4150 - 1024 - 2000 = 1126 tokens: [1] costs 669, [2] as a window <= 383, then < 200 chars left
    args = [*flags(tmp_path, fake_ollama.url, "--set", "llm.context_window=4150"), "ask", "How do pumps start?",
            "-c", "docs", "--no-annotate"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "from 2 source(s): [1] [2]; the most relevant part of [2]; did not fit: [3])" in out
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["used"] == [1] and data["used_window"] == [2] and data["did_not_fit"] == [3]
    assert [s["in_answer"] for s in data["sources"]] == ["whole", "window", "did not fit"]
    prompt = fake_ollama.calls("/api/chat")[-1].body["messages"][-1]["content"]
    assert "Pumps start slowly when cold." in prompt and "Pumps prime first." not in prompt
