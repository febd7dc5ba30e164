"""An annotation that judges its source relevant but quotes nothing of it: marked "no quote", listed after
the quoted sources by `ask`, packed one place below its rank, its raw reply kept for the user, and
the mark stored in the history (a file of schema 2 opens, its sources judged again on load). The CLI runs as a
real subprocess against the fake Ollama on loopback."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from ragtui.history import SCHEMA_VERSION, HistoryStore
from ragtui.model import conversation as transitions
from ragtui.model.conversation import AnnotationState, Conversation, Standing, Turn
from tests.cli_run import cli
from tests.fake_ollama import FakeOllama, Reply, default_responder, fenced
from tests.model_habits import answers_without_quoting
from tests.tui.scripted import make_sources
from tests.tui.test_session import write_corpus

CODE = "```python\nrows = csv.read_csv('data.csv')\n```"


def valves_unquoted(body: dict[str, Any]) -> Reply:
    """Annotations quote their extract, except the valves one, which gives code and a paraphrase."""
    prompt = body["messages"][-1]["content"]
    if "EXTRACT:" in prompt and "valve" in fenced(prompt.split("EXTRACT:", 1)[1]):
        return Reply.text(answers_without_quoting(body))
    return default_responder(body)


def test_ask_marks_a_relevant_source_with_no_quote_and_lists_it_last(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    assert cli(tmp_path, fake_ollama.url, "ingest", str(write_corpus(tmp_path)), "-c", "docs").returncode == 0
    fake_ollama.responder = valves_unquoted
    done = cli(tmp_path, fake_ollama.url, "ask", "how do pumps start")
    assert done.returncode == 0, done.stderr
    stored = HistoryStore(tmp_path / "data").load(1)
    [valves] = [s for s in stored.all_sources if "valve" in s.chunk.text.lower()]
    assert valves.quoteless and valves.state is AnnotationState.RELEVANT and valves.standing is Standing.NO_QUOTE
    assert not any(s.quoteless for s in stored.all_sources if s is not valves)

    lines = done.stdout.splitlines()
    annotated = [line for line in lines if re.match(r"  \[\d+\] (relevant|filtered)", line)]
    assert len(annotated) == len(stored.all_sources) >= 3
    assert annotated[-1].startswith(f"  [{valves.number}] relevant, no quote (by chat with the default prompt): "
                                    "You can read the file with")
    assert lines.index(annotated[-1]) < next(i for i, line in enumerate(lines) if line.startswith("Answer ("))

    prompt = fake_ollama.calls("/api/chat")[-1].body["messages"][-1]["content"]
    order = [int(n) for n in re.findall(r"(?m)^\[(\d+)\] SOURCE:", prompt)]
    assert len(order) >= 3 and valves.number in order[1:-1]            # in the middle, not at either end

    as_json = cli(tmp_path, fake_ollama.url, "ask", "--json", "how do pumps start")
    sources = {s["number"]: s for s in json.loads(as_json.stdout)["sources"]}
    [entry] = [s for s in sources.values() if s["quoteless"]]
    assert entry["state"] == "relevant" and CODE in entry["annotation"]   # the raw reply, code block and all


def test_an_unquoted_source_goes_one_place_down_and_the_best_one_still_reaches_a_tight_prompt(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """The valves file's annotation quotes nothing of it: it is packed behind the next quoted source, not behind
    all of them, so a prompt of two sources holds it when it ranks first, and not when it ranks second."""
    assert cli(tmp_path, fake_ollama.url, "ingest", str(write_corpus(tmp_path)), "-c", "docs").returncode == 0
    fake_ollama.responder = valves_unquoted
    for question, valves, used in (("which valve opens before pumps start", 1, [1, 2]),
                                   ("start valve pumps", 2, [1, 3])):
        done = cli(tmp_path, fake_ollama.url, "--set", "llm.context_chunks=2", "ask", "--json", question)
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert [s["number"] for s in data["sources"] if s["quoteless"]] == [valves]
        assert [s["label"] for s in data["sources"]][valves - 1] == "docs/valves.txt"
        assert len(data["sources"]) == 4 and all(s["relevant"] for s in data["sources"])
        assert sorted(data["used"] + data["used_window"]) == used
        assert data["did_not_fit"] == sorted({1, 2, 3, 4} - set(used))


def _with_quote_and_without() -> Conversation:
    one, two = make_sources()[:2]
    quoted = transitions.annotated(one, f'"{one.chunk.text.split(".")[0]}." Relevant.', relevant=True, by="chat",
                                   prompt="")
    unquoted = transitions.annotated(two, "This is relevant: it is about the topic.", relevant=True, by="chat",
                                     prompt="")
    assert not quoted.quoteless and unquoted.quoteless
    return Conversation(["demo"], {}, "chat", "chat", turns=[Turn("q", sources=(quoted, unquoted))])


def test_the_mark_is_stored_and_reopened(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    saved = store.save(_with_quote_and_without())
    assert [s.quoteless for s in store.load(saved.id or 0).all_sources] == [False, True]


def test_a_schema_2_file_opens_and_its_sources_are_judged_on_load(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    saved = store.save(_with_quote_and_without())
    with sqlite3.connect(store.path) as conn:                  # the file as schema 2 wrote it: no such column
        conn.execute("ALTER TABLE sources DROP COLUMN quoteless")
        conn.execute("PRAGMA user_version = 2")
    reopened = HistoryStore(tmp_path)
    with sqlite3.connect(reopened.path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
        assert [r[0] for r in conn.execute("SELECT quoteless FROM sources ORDER BY number")] == [None, None]
    record = reopened.load(saved.id or 0)
    assert [s.quoteless for s in record.all_sources] == [False, True]
    reopened.save(record)                                      # and saved again with the mark stored
    with sqlite3.connect(reopened.path) as conn:
        assert [r[0] for r in conn.execute("SELECT quoteless FROM sources ORDER BY number")] == [0, 1]
