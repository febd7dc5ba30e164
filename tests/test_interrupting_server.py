"""A server that serves one request at a time and cuts the running stream when another arrives
(llama-cpp-python's OpenAI-compatible server, whose interrupt_requests is on by default), through the real CLI
in a subprocess, with the shipped defaults (annotation.concurrency = 4)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama, default_responder
from tests.fake_openai import FakeOpenAI

TOPICS = ("seals", "impellers", "bearings", "valves", "motors", "casings", "shafts", "gaskets", "couplings",
          "strainers", "gauges", "manifolds")


def write_pump_notes(root: Path) -> Path:
    """One short note per pump part, each saying how pumps start, so every note is a source for that question."""
    folder = root / "notes"
    folder.mkdir()
    for topic in TOPICS:
        (folder / f"{topic}.md").write_text(
            f"# Pump {topic}\n\nCentrifugal pumps start once primed, and their {topic} need checking before a "
            f"pump starts. Worn {topic} make a pump start badly.\n", encoding="utf-8")
    return folder


def replies(body: dict[str, Any]) -> str:
    """Annotations quote their extract's first sentence; an answer cites [1]."""
    return "".join(default_responder(body).pieces)


@pytest.fixture
def interrupting() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.responder, server.interrupting, server.piece_s = replies, True, 0.02
    server.start()
    yield server
    server.stop()


def openai(server: FakeOpenAI, *extra: str) -> tuple[str, ...]:
    return ("--set", "llm.provider=openai", "--set", "llm.model=served-model", "--set", f"llm.base_url={server.url}",
            *extra)


@pytest.fixture
def notes(tmp_path: Path, fake_ollama: FakeOllama) -> Path:
    done = cli(tmp_path, fake_ollama.url, "ingest", str(write_pump_notes(tmp_path)), "-c", "notes")
    assert done.returncode == 0, done.stderr
    return tmp_path


def test_every_source_is_annotated_when_the_server_cuts_streams(notes: Path, fake_ollama: FakeOllama,
                                                                 interrupting: FakeOpenAI) -> None:
    done = cli(notes, fake_ollama.url, *openai(interrupting), "ask", "how do pumps start", timeout=240)
    assert done.returncode == 0, done.stderr
    found = re.search(r"^(\d+) source\(s\) for", done.stdout, re.MULTILINE)
    assert found, done.stdout
    count = int(found.group(1))
    annotated = re.findall(r"^  \[(\d+)\] relevant \(by served-model", done.stdout, re.MULTILINE)
    assert count >= 8 and sorted(map(int, annotated)) == list(range(1, count + 1)), done.stdout   # none lost
    assert "annotation failed" not in done.stdout
    assert interrupting.interrupted >= 2                                       # the server did cut streams
    lowered = [line for line in done.stderr.splitlines() if "annotation.concurrency" in line]
    assert lowered == ["ragtui: warning: annotation streams from served-model were cut while others were in "
                       "flight; annotating one source at a time for the rest of this session (annotation.concurrency "
                       "4 -> 1; set it to 1 for a server that answers one request at a time)"]
    retried = [line for line in done.stderr.splitlines() if "asking again alone" in line]
    assert len(retried) == interrupting.interrupted                          # each cut said in one line
    assert all(re.fullmatch(r"ragtui: info: the annotation of \[\d+\] failed \(the answer from served-model at "
                            r"\S+ ended without its final frame \(connection dropped\?\)\); asking again alone "
                            r"\(attempt 2 of 3, llm.retries\)", line) for line in retried), retried
    assert "Traceback" not in done.stderr
