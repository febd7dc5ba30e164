"""`ragtui doctor` with a configured model the server does not serve lists the ids it does serve (Ollama's
/api/tags, an OpenAI-compatible /v1/models): bounded, each id made inert. Through the real CLI in a subprocess
against the fake servers on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fake_ollama import FakeOllama, Model
from tests.fake_openai import FakeOpenAI

HOSTILE = "evil\x1b[2J\x1b]0;pwned\x07-" + "x" * 300


def doctor(tmp_path: Path, host: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragtui", "--config", os.devnull, "--data-dir",
                           str(tmp_path / "data"), "--ollama-host", host, "--set", "synonyms.enabled=false",
                           *args, "doctor"], capture_output=True, text=True, timeout=120, check=False)


def line_of(out: str, start: str) -> str:
    [line] = [line for line in out.splitlines() if line.startswith(start)]
    return line


def test_a_missing_ollama_model_lists_what_is_pulled(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    done = doctor(tmp_path, fake_ollama.url, "--set", "llm.model=llama3.1:8b")
    assert done.returncode == 1
    line = line_of(done.stdout, "FAIL  model llama3.1:8b")
    assert line.endswith(f"not pulled at {fake_ollama.url}: run `ollama pull llama3.1:8b` "
                         f"(pulled there: {', '.join(f'{m}:latest' for m in fake_ollama.models)})")


def test_the_list_is_capped_and_each_name_inert(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.add_model(Model(HOSTILE, "chat"))
    for n in range(30):
        fake_ollama.add_model(Model(f"extra-{n:02}", "chat"))
    done = doctor(tmp_path, fake_ollama.url, "--set", "llm.model=llama3.1:8b")
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    line = line_of(done.stdout, "FAIL  model llama3.1:8b")
    listed = line.split("(pulled there: ", 1)[1]
    hostile = "evil\\x1b[2J\\x1b]0;pwned\\x07-" + "x" * 51 + "…"          # escapes shown, clipped to 80
    assert listed == ("nomic-embed-text:latest, all-minilm:latest, chat:latest, annotator:latest, "
                      f"{hostile}, extra-00:latest, extra-01:latest, extra-02:latest, extra-03:latest, "
                      "extra-04:latest and 25 more)")


def test_a_model_the_openai_server_does_not_serve_lists_what_it_serves(tmp_path: Path,
                                                                       fake_ollama: FakeOllama) -> None:
    served = ("/models/SmolLM2-135M-Instruct-Q8_0.gguf", HOSTILE, *(f"m{n}" for n in range(20)))
    server = FakeOpenAI(models=served).start()
    try:
        done = doctor(tmp_path, fake_ollama.url, "--set", "llm.provider=openai", "--set",
                      f"llm.base_url={server.url}", "--set", "llm.model=smollm2")
    finally:
        server.stop()
    assert done.returncode == 1 and "\x1b" not in done.stdout
    line = line_of(done.stdout, "FAIL  llm endpoint")
    hostile = "evil\\x1b[2J\\x1b]0;pwned\\x07-" + "x" * 51 + "…"
    assert line.endswith(f"{server.url} does not serve 'smollm2'; it serves: "
                         f"/models/SmolLM2-135M-Instruct-Q8_0.gguf, {hostile}, m0, m1, m2, m3, m4, m5, m6, m7 "
                         "and 12 more (set [llm] model to one of these)")
