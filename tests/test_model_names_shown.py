"""A model id that is a file's path (llama.cpp's server names its model so) is shown by its display name
(`model_ids.short_name`) on `ask`'s lines, and kept whole in `--json` and the history's details. Through the
real CLI in a subprocess against the fake OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama
from tests.fake_openai import FakeOpenAI
from tests.model_habits import cites_after_full_stop
from tests.tui.test_session import write_corpus

MODEL_PATH = "/home/me/models/smollm2/SmolLM2-135M-Instruct-Q8_0.gguf"
SHORT = "SmolLM2-135M-Instruct-Q8_0"


def test_ask_lines_show_the_short_name_and_json_the_full_id(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    assert cli(tmp_path, fake_ollama.url, "ingest", str(write_corpus(tmp_path)), "-c", "docs").returncode == 0
    server = FakeOpenAI(models=(MODEL_PATH,)).start()
    server.responder = cites_after_full_stop
    flags = ("--set", "llm.provider=openai", "--set", f"llm.base_url={server.url}", "--set", f"llm.model={MODEL_PATH}")
    try:
        done = cli(tmp_path, fake_ollama.url, *flags, "ask", "how do pumps start")
        as_json = cli(tmp_path, fake_ollama.url, *flags, "ask", "--json", "how do pumps start")
        shown = cli(tmp_path, fake_ollama.url, "history", "show", "1")
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    assert MODEL_PATH not in done.stdout
    annotated = [line for line in done.stdout.splitlines() if line.startswith("  [") and " relevant " in line]
    assert annotated and all(f"(by {SHORT} with the default prompt)" in line for line in annotated)
    assert f"\nAnswer ({SHORT}, from " in done.stdout
    data = json.loads(as_json.stdout)
    assert {s["annotated_by"] for s in data["sources"]} == {MODEL_PATH}
    assert f"synthesis {MODEL_PATH}" in shown.stdout                     # the details keep the full id
