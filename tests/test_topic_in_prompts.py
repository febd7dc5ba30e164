"""A collection's `--topic` reaches the prompts (the annotator and the answer are told what the collection is
about), and `ask --json` names each source's file hash and heading path. Through the real CLI in subprocesses,
against the fake Ollama on loopback, whose recorded requests are the prompts the models got."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama

PUMPS = "# Pumps\n\n## Starting\n\nCentrifugal pumps start at 3 bar. They need priming first.\n"
TOPIC = "maintenance of the town's water works"


def test_the_topic_reaches_the_annotator_and_the_answer_and_json_sources_name_hash_and_heading(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pumps.md").write_text(PUMPS)
    assert cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", "works", "--topic", TOPIC).returncode == 0
    asked = cli(tmp_path, fake_ollama.url, "ask", "how do pumps start", "-c", "works", "--json")
    assert asked.returncode == 0, asked.stderr

    chats = [c.body["messages"] for c in fake_ollama.calls("/api/chat")]
    annotations = [m for m in chats if "EXTRACT" in m[-1]["content"]]
    answers = [m for m in chats if "SOURCES:" in m[-1]["content"]]
    assert annotations and answers
    for messages in annotations:
        assert messages[0]["role"] == "system"
        assert messages[0]["content"].endswith(f"The extract comes from a collection about: {TOPIC}.")
    for messages in answers:
        assert f"THE SOURCES' COLLECTIONS ARE ABOUT: works: {TOPIC}\n\nSOURCES:" in messages[-1]["content"]

    [source] = json.loads(asked.stdout)["sources"]
    assert source["file_hash"] == hashlib.sha256(PUMPS.encode()).hexdigest()
    assert source["heading"] == "Pumps"                              # the section the chunk starts in
