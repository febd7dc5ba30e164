"""`[embed] provider = "openai"`: chunks and queries embedded by an OpenAI-compatible server's /v1/embeddings
(llama.cpp's server, vLLM), with no Ollama anywhere. Through the real CLI in a subprocess, against the fake
server over HTTP: batches, retries of a dropped reply, dimension checks with the way out, one-line failures,
the same report lines as Ollama's, and `doctor`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtui.config import ConfigError, load_settings
from ragtui.config_sections import Secret
from tests.cli_run import ROOT, run_ragtui
from tests.fake_ollama import FakeOllama
from tests.fake_openai import FakeOpenAI

NO_OLLAMA = "http://127.0.0.1:9"
DOCS = {
    "valve.txt": "The float valve refills the cistern after each flush until the float rises. " * 4,
    "pump.txt": "A centrifugal pump moves water by spinning an impeller inside its casing. " * 4,
    "roof.txt": "Clay tiles on a pitched roof shed rain into the gutters along the eaves. " * 4,
}
REEMBED = "ragtui collections reembed c --model embed-model"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    return folder


def ragtui(tmp_path: Path, server: FakeOpenAI, *args: str, ollama: str = NO_OLLAMA, provider: str = "openai",
           sets: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """`ragtui ARGS` embedding with `embed-model` at the fake server (Ollama unreachable), backoff 0, and
    `--set` each of `sets`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home")}
    argv = [sys.executable, "-m", "ragtui", "--config", os.devnull, "--data-dir", str(tmp_path / "data"),
            "--ollama-host", ollama, "--set", "synonyms.enabled=false", "--set", "embed.backoff_s=0",
            "--set", f"embed.provider={provider}", "--set", f"embed.base_url={server.url}",
            "--set", "embed.model=embed-model", "--set", "embed.batch_size=2",
            *(flag for item in sets for flag in ("--set", item)), *args]
    return run_ragtui(argv, env, timeout=180)


def embed_calls(server: FakeOpenAI) -> list[list[str]]:
    return [r["input"] for r in server.requests if "input" in r]


def test_ingest_and_query_embed_through_the_openai_compatible_server(tmp_path: Path, server: FakeOpenAI,
                                                                    docs: Path) -> None:
    ingested = ragtui(tmp_path, server, "ingest", str(docs), "-c", "c")
    assert ingested.returncode == 0, ingested.stderr
    assert "chunks: 3 indexed, 3 embedded" in ingested.stdout and ingested.stderr == ""
    calls = embed_calls(server)
    assert calls[0] == ["dimension probe"]                        # the dimension, before the first batch
    assert sorted(len(c) for c in calls[1:]) == [1, 2]            # embed.batch_size = 2 texts per request
    assert all(r["model"] == "embed-model" for r in server.requests)

    found = ragtui(tmp_path, server, "query", "float valve cistern", "-c", "c", "--json")
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert not result["keyword_only"] and result["notices"] == []
    assert result["nodes"][0]["source"] == "valve.txt" and "vector" in result["nodes"][0]["legs"]
    assert result["retrieval_meta"]["collections"]["c"]["vector"]["vectors"] == {"embed-model": len(DOCS)}
    assert embed_calls(server)[-1] == ["float valve cistern"]     # the query, by the same server


def test_the_report_says_what_ollamas_says(tmp_path: Path, server: FakeOpenAI, docs: Path,
                                           fake_ollama: FakeOllama) -> None:
    """The same documents embedded by Ollama and by the OpenAI-compatible server report in the same lines."""
    fake_ollama.models["embed-model"] = fake_ollama.models["nomic-embed-text"]
    by_openai = ragtui(tmp_path / "a", server, "ingest", str(docs), "-c", "c")
    by_ollama = ragtui(tmp_path / "b", server, "ingest", str(docs), "-c", "c", ollama=fake_ollama.url,
                       provider="ollama")
    assert by_openai.returncode == by_ollama.returncode == 0

    def lines(out: str) -> list[str]:    # the figures that depend on time left out
        return [re.sub(r"[\d.,]+ ?(s|chunks/s)\b", "T", line) for line in out.splitlines()
                if not line.startswith("progress:")]

    assert lines(by_openai.stdout) == lines(by_ollama.stdout)


def test_a_dropped_reply_is_retried(tmp_path: Path, server: FakeOpenAI, docs: Path) -> None:
    server.embed_drops = 2                       # the probe's first try and its second: the third answers
    ingested = ragtui(tmp_path, server, "ingest", str(docs), "-c", "c")
    assert ingested.returncode == 0, ingested.stderr
    assert "3 embedded" in ingested.stdout and "warning" not in ingested.stdout + ingested.stderr
    assert embed_calls(server)[:3] == [["dimension probe"]] * 3


def test_a_server_that_keeps_dropping_is_one_warning_and_the_chunks_wait(tmp_path: Path, server: FakeOpenAI,
                                                                          docs: Path) -> None:
    server.embed_drops = 2
    ingested = ragtui(tmp_path, server, "ingest", str(docs), "-c", "c", sets=("embed.retries=2",))
    assert ingested.returncode == 0, ingested.stderr
    out = ingested.stdout
    assert f"embedding with 'embed-model' at {server.url} failed after 2 attempts" in out
    assert "run the ingest again when the embedding server is reachable" in out and "Traceback" not in out
    assert len(embed_calls(server)) == 2

    again = ragtui(tmp_path, server, "ingest", str(docs), "-c", "c")     # the server is back: the chunks resume
    assert again.returncode == 0 and "3 embedded" in again.stdout, again.stdout


def test_another_dimension_is_refused_and_named_with_the_way_out(tmp_path: Path, server: FakeOpenAI,
                                                                docs: Path) -> None:
    assert ragtui(tmp_path, server, "ingest", str(docs), "-c", "c").returncode == 0
    server.embed_models["embed-model"] = 24      # the server now serves another model under the same name

    found = json.loads(ragtui(tmp_path, server, "query", "float valve cistern", "-c", "c", "--json").stdout)
    assert found["keyword_only"] and any(REEMBED in n for n in found["notices"]), found["notices"]

    (docs / "lamp.txt").write_text("An oil lamp burns paraffin drawn up through a cotton wick. " * 4)
    again = ragtui(tmp_path, server, "ingest", str(docs), "-c", "c")
    assert again.returncode == 0, again.stderr
    assert "48-dimension" in again.stderr and "gives 24" in again.stderr and REEMBED in again.stderr
    assert "warning" in again.stdout and "1 added" in again.stdout
    assert all(len(c) == 1 for c in embed_calls(server)[-1:])   # the probe only: nothing else was sent

    reembedded = ragtui(tmp_path, server, "collections", "reembed", "c", "--model", "embed-model")
    assert reembedded.returncode == 0 and "warning" not in reembedded.stderr, reembedded.stderr
    fixed = json.loads(ragtui(tmp_path, server, "query", "float valve cistern", "-c", "c", "--json").stdout)
    assert not fixed["keyword_only"] and fixed["nodes"][0]["source"] == "valve.txt"


def test_one_vector_per_token_is_named_and_nothing_is_stored(tmp_path: Path, server: FakeOpenAI,
                                                             docs: Path) -> None:
    """What llama-cpp-python's server sends for a model it does not pool (a chat model's GGUF)."""
    server.per_token = True
    ingested = ragtui(tmp_path, server, "ingest", str(docs), "-c", "c")
    assert ingested.returncode == 0, ingested.stderr
    warnings = [line for line in ingested.stderr.splitlines() if "per token" in line]
    assert len(warnings) == 1 and "serve an embedding model" in warnings[0], ingested.stderr
    assert "0 embedded" in ingested.stdout and "run the ingest again" in ingested.stdout

    found = ragtui(tmp_path, server, "query", "float valve cistern", "-c", "c", "--json")
    result = json.loads(found.stdout)
    assert result["keyword_only"] and result["nodes"][0]["source"] == "valve.txt"


def test_a_model_the_server_does_not_serve_is_one_line_naming_its_model_list(tmp_path: Path, server: FakeOpenAI,
                                                                               docs: Path) -> None:
    server.embed_models = {"other-model": 48}
    ingested = ragtui(tmp_path, server, "ingest", str(docs), "-c", "c")
    assert ingested.returncode == 0
    assert "'embed-model' is not served by the embedding server at" in ingested.stderr
    assert "/v1/models" in ingested.stderr and "ollama pull" not in ingested.stderr
    assert len(embed_calls(server)) == 1                          # not retried


def test_doctor_checks_the_embedding_server(tmp_path: Path, server: FakeOpenAI) -> None:
    ok = ragtui(tmp_path, server, "doctor", sets=("llm.provider=openai", f"llm.base_url={server.url}",
                                                  "llm.model=served-model"))
    assert ok.returncode == 0, ok.stdout
    assert re.search(r"ok +embed model embed-model +.* embeds with it \(48 dimensions\)", ok.stdout)
    assert re.search(r"skip +ollama +not used", ok.stdout)          # nothing asks Ollama for anything

    server.embed_models = {"other-model": 48}
    missing = ragtui(tmp_path, server, "doctor")
    assert missing.returncode == 1
    assert re.search(r"FAIL +embed model embed-model .*HTTP 404.*/v1/models", missing.stdout), missing.stdout
    assert not re.search(r"model embed-model +not pulled", missing.stdout)    # never looked up in Ollama


def test_the_embedding_server_and_its_key() -> None:
    """embed.base_url, else the LLM's OpenAI-compatible server; the LLM's key goes only to the LLM's server."""
    shared = load_settings(env={}, overrides=["llm.provider=openai", "llm.base_url=http://gpu:8000/v1",
                                              "llm.api_key=sk-llm", "embed.provider=openai"])
    assert shared.embed_server == ("http://gpu:8000/v1", Secret("sk-llm"))
    other = shared.replace(embed__base_url="http://embedder:8080/v1")
    assert other.embed_server == ("http://embedder:8080/v1", Secret())
    own = other.replace(embed__api_key="sk-embed")
    assert own.embed_server == ("http://embedder:8080/v1", Secret("sk-embed"))
    with pytest.raises(ConfigError, match=r"embed\.base_url"):
        load_settings(env={}, overrides=["embed.provider=openai"])
    with pytest.raises(ConfigError, match=r"embed\.base_url"):
        load_settings(env={}, overrides=["embed.provider=openai", "embed.base_url=gpu:8000"])
