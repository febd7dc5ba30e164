"""Checks on the answer, through the real CLI in a subprocess against the fake servers on loopback: a looping
answer is stopped while it streams, or found looping where llm.max_tokens cut it (stop reason "repetition",
what came before kept, not offered for continue, never advised to be made longer); a continuation that writes
the answer's last paragraph again loses that copy, and is told; an answer that cites no source [N] is warned
about (a stderr line, `"warnings"` in --json), and so is one that copies its prompt's source headers back (its
"[1]" is no citation) or only names sources by number, also when the session is reopened."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragtui.history import HistoryStore
from tests.cli_run import cli
from tests.fake_ollama import FakeOllama, Reply, default_responder
from tests.fake_openai import FakeOpenAI
from tests.model_habits import (
    LONG_PASSAGE,
    LOOP_INTRO,
    LOOP_PARAGRAPH,
    NEW_TEXT,
    PARAGRAPHS,
    TWO_AND_A_HALF,
    TWO_PARAGRAPHS,
    as_reply,
    echoes_source_header,
    lists_source_numbers,
    loops,
    loops_until_cut,
    repeats_last_paragraph,
)
from tests.tui.test_session import write_corpus

OPENAI = ("--set", "llm.provider=openai", "--set", "llm.model=served-model", "--set", "annotation.enabled=false")


@pytest.fixture
def ingested(tmp_path: Path, fake_ollama: FakeOllama) -> Path:
    done = cli(tmp_path, fake_ollama.url, "ingest", str(write_corpus(tmp_path)), "-c", "docs")
    assert done.returncode == 0, done.stderr
    return tmp_path


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("ragtui: warning:")]


# --- a looping answer -------------------------------------------------------------------------------------

def test_a_looping_answer_is_stopped_its_first_copy_kept_and_saved(ingested: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = as_reply(loops)      # the paragraph ten times over
    done = cli(ingested, fake_ollama.url, "ask", "how do pumps start")
    assert done.returncode == 0, done.stderr
    shown = done.stdout.split("):\n\n", 1)[1]
    assert shown.startswith(LOOP_INTRO + LOOP_PARAGRAPH)
    [line] = [line for line in warnings(done.stderr) if "repeating itself" in line]
    assert line.startswith("ragtui: warning: chat began repeating itself (3 copies of 'Running a pump dry")
    assert "the answer was stopped there and the repeats dropped" in line
    assert "It is not offered for continue, which would loop again" in line

    turn = HistoryStore(ingested / "data").load(1).turn
    assert turn.stop_reason == "repetition"
    assert turn.answer == LOOP_INTRO + LOOP_PARAGRAPH               # what came before, and one copy

    again = cli(ingested, fake_ollama.url, "ask", "--continue", "--session", "1")
    assert again.returncode == 1 and again.stdout == ""
    assert again.stderr.splitlines() == [
        "ragtui: session 1: the answer was stopped because it repeated itself: continuing it would loop again; "
        "synthesize again for a fresh answer (stop reason: repetition; `ragtui ask --resynthesize --session 1` "
        "answers afresh)"]


def test_an_endless_looping_stream_is_closed_with_stop_reason_repetition(ingested: Path, fake_ollama: FakeOllama,
                                                                        fake_openai: FakeOpenAI) -> None:
    fake_openai.endless = True                   # the paragraph over and over, never a stop
    fake_openai.answer = LOOP_PARAGRAPH + " "
    done = cli(ingested, fake_ollama.url, *OPENAI, "--set", f"llm.base_url={fake_openai.url}",
               "--set", "llm.max_tokens=2000", "ask", "--json", "how do pumps start", timeout=60)
    assert done.returncode == 0, done.stderr
    turn = json.loads(done.stdout)["turns"][-1]
    assert turn["stop_reason"] == "repetition" and turn["answer"] == LOOP_PARAGRAPH
    assert turn["citations"] == [2] and turn["warnings"] == []
    assert fake_openai.hung_up.wait(10)          # the stream was closed, long before max_tokens


def test_a_continuation_that_loops_is_stopped_and_the_part_before_kept(ingested: Path,
                                                                        fake_ollama: FakeOllama) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        if "EXTRACT" in body["messages"][-1]["content"]:
            return default_responder(body)
        if any(m["role"] == "assistant" for m in body["messages"]):        # asked to go on: it loops
            return Reply.text("\n\n".join([LOOP_PARAGRAPH] * 10))
        return Reply.text(LOOP_INTRO + "The seals need care.")
    fake_ollama.responder = respond
    first = cli(ingested, fake_ollama.url, "--set", "llm.max_tokens=7", "ask", "how do pumps start")
    assert first.returncode == 0 and "cut at llm.max_tokens" in first.stderr, first.stderr
    partial = HistoryStore(ingested / "data").load(1).turn.answer
    assert partial == LOOP_INTRO

    done = cli(ingested, fake_ollama.url, "ask", "--continue", "--json")
    assert done.returncode == 0, done.stderr
    turn = json.loads(done.stdout)
    assert turn["stop_reason"] == "repetition" and turn["continuations"] == 1
    assert turn["answer"] == LOOP_INTRO + LOOP_PARAGRAPH                  # the part before, and one copy


def test_an_answer_cut_at_max_tokens_inside_a_loop_is_marked_looping_and_not_continued(
        ingested: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = as_reply(loops_until_cut)      # two and a half copies of a 45-word passage by the cut
    done = cli(ingested, fake_ollama.url, "--set", f"llm.max_tokens={TWO_AND_A_HALF}", "ask", "how do pumps start")
    assert done.returncode == 0, done.stderr
    [line] = [line for line in warnings(done.stderr) if "repeating itself" in line]
    assert line.startswith("ragtui: warning: chat began repeating itself (2 copies of 'Running a pump dry")
    assert "it was looping when llm.max_tokens cut it; the repeats were dropped" in line
    assert "raise llm.max_tokens" not in done.stderr and "--continue` goes on" not in done.stderr

    turn = HistoryStore(ingested / "data").load(1).turn
    assert turn.stop_reason == "repetition" and not turn.can_continue
    assert turn.answer == LOOP_INTRO + LONG_PASSAGE                 # what came before, and one copy
    again = cli(ingested, fake_ollama.url, "ask", "--continue", "--session", "1")
    assert again.returncode == 1 and "continuing it would loop again" in again.stderr


def test_a_continuation_that_writes_the_last_paragraph_again_loses_that_copy_and_says_so(
        ingested: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = as_reply(repeats_last_paragraph)
    first = cli(ingested, fake_ollama.url, "--set", f"llm.max_tokens={TWO_PARAGRAPHS}", "ask", "how do pumps start")
    assert first.returncode == 0 and "cut at llm.max_tokens" in first.stderr, first.stderr
    partial = HistoryStore(ingested / "data").load(1).turn.answer
    assert partial == PARAGRAPHS.rsplit("\n\n", 1)[0] + "\n\n"

    done = cli(ingested, fake_ollama.url, "ask", "--continue")
    assert done.returncode == 0, done.stderr
    assert HistoryStore(ingested / "data").load(1).turn.answer == partial + NEW_TEXT   # the copy dropped, the new kept
    assert done.stdout.startswith(partial + NEW_TEXT + "\n")                 # as printed
    # the habit's paragraphs cite [2] for a pressure only [1] states: the number check's line is not this test's
    assert [line for line in warnings(done.stderr) if "a number not in the source" not in line] == [
        "ragtui: warning: chat began its continuation by writing the answer's last paragraph again; that copy was "
        "dropped"]


# --- an answer that cites nothing -------------------------------------------------------------------------

def test_an_answer_that_cites_no_source_is_warned_about(ingested: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: (default_responder(body) if "EXTRACT" in body["messages"][-1]["content"]
                                          else Reply.text("Pumps start at 3 bar once primed."))
    done = cli(ingested, fake_ollama.url, "ask", "how do pumps start")
    assert done.returncode == 0, done.stderr
    assert "Pumps start at 3 bar once primed." in done.stdout and "Cited:" not in done.stdout
    assert warnings(done.stderr) == ["ragtui: warning: the answer cites no source [N]: nothing in it is tied to a "
                                     "source; check it against the sources"]
    as_json = cli(ingested, fake_ollama.url, "ask", "--json", "how do pumps start")
    data = json.loads(as_json.stdout)
    assert data["citations"] == [] and data["warnings"] == ["no_citations"]


def test_a_cited_answer_has_no_citation_warning(ingested: Path, fake_ollama: FakeOllama) -> None:
    done = cli(ingested, fake_ollama.url, "ask", "--json", "how do pumps start")   # "... [1]."
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["citations"] == [1] and data["warnings"] == [] and data["stop_reason"] == "stop"
    assert warnings(done.stderr) == []


# --- an echo of the prompt, a non-answer ---------------------------------------------------------------------

def test_an_answer_that_copies_the_prompts_source_header_is_an_echo_and_cites_nothing(
        ingested: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = as_reply(echoes_source_header)
    done = cli(ingested, fake_ollama.url, "ask", "how do pumps start")
    assert done.returncode == 0, done.stderr
    assert re.search(r"\):\n\n\[\d+\] SOURCE: docs/", done.stdout)             # the header, written back
    assert warnings(done.stderr) == [
        "ragtui: warning: the answer is mostly text copied from the prompt (source headers, source text, the "
        "question): it answers nothing, and a [N] inside the copy is not a citation",
        "ragtui: warning: the answer cites no source [N]: nothing in it is tied to a source; check it against the "
        "sources"]
    turn = HistoryStore(ingested / "data").load(1).turn                    # saved: the reopened turn says so
    assert turn.echo and not turn.non_answer and turn.citations == ()
    data = json.loads(cli(ingested, fake_ollama.url, "ask", "--json", "how do pumps start").stdout)
    assert data["warnings"] == ["echo", "no_citations"] and data["citations"] == []


def test_an_answer_that_only_names_sources_is_a_non_answer(ingested: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = as_reply(lists_source_numbers)
    done = cli(ingested, fake_ollama.url, "ask", "how do pumps start")
    assert done.returncode == 0, done.stderr
    assert warnings(done.stderr) == ["ragtui: warning: the answer only names sources ([N]) and says nothing they "
                                     "say: it is not an answer; read the sources, or ask again"]
    assert HistoryStore(ingested / "data").load(1).turn.non_answer
    data = json.loads(cli(ingested, fake_ollama.url, "ask", "--json", "how do pumps start").stdout)
    assert data["warnings"] == ["non_answer"] and data["citations"] == [1, 2, 3]
