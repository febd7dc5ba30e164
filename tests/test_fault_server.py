"""Every provider path against a hostile server: the fake Ollama and the fake OpenAI-compatible server made to drop
the connection, answer 503, flap (fail once, then answer), send a huge reply, JSON nested too deep, a slow drip,
wrong counts, wrong types or 400-digit integers, on one path at a time, through the real CLI.

A fault that happens once on a call that is asked again is recovered from (the command succeeds as if nothing
happened); any other ends in one clear line (or a notice, where the command degrades: a query whose embedder
fails searches by keywords), never a traceback, and the exit code of a runtime failure at worst.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_run import cli
from tests.fake_ollama import FAULTS, FakeOllama
from tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.xdist_group("fault-server")

QUESTION = "how does a centrifugal pump start"
ANSWERED = "The sources agree on"
FAST = ("--set", "limits.max_reply_mb=1", "--set", "ollama.timeout=3", "--set", "embed.timeout=3",
        "--set", "llm.request_timeout=3", "--set", "llm.reply_deadline_s=3", "--set", "llm.backoff_s=0",
        "--set", "embed.backoff_s=0")


@dataclass(frozen=True)
class Path_:
    """One provider path: the server it calls, the request path faults are injected on, and the command."""

    name: str
    server: str          # "ollama" | "openai"
    path: str
    command: tuple[str, ...]
    retried: bool        # a fault that happens once is recovered from
    done: str            # what a successful run prints
    sets: tuple[str, ...] = ()


NO_ANNOTATION = ("--set", "annotation.enabled=false")
PATHS = [
    Path_("ollama chat stream", "ollama", "/api/chat", ("ask", QUESTION, "-c", "docs"), True, ANSWERED, NO_ANNOTATION),
    Path_("ollama annotate", "ollama", "/api/chat", ("ask", QUESTION, "-c", "docs"), True, ANSWERED),
    Path_("ollama /api/show", "ollama", "/api/show", ("ask", QUESTION, "-c", "docs"), True, ANSWERED, NO_ANNOTATION),
    Path_("ollama /api/tags", "ollama", "/api/tags", ("doctor",), False, "All good"),
    Path_("ollama embed for ingest", "ollama", "/api/embed", ("ingest", "DOCS", "-c", "NEW"), True, "embedded"),
    Path_("ollama embed for query", "ollama", "/api/embed", ("query", QUESTION, "-c", "docs"), True, "pump.txt"),
    Path_("openai /v1/models", "openai", "/v1/models", ("doctor",), False, "serves 1 model(s)"),
    Path_("openai /v1/chat/completions", "openai", "/v1/chat/completions",
          ("ask", QUESTION, "-c", "docs"), True, "The pump starts", NO_ANNOTATION),
    Path_("openai /v1/embeddings for ingest", "openai", "/v1/embeddings", ("ingest", "DOCS", "-c", "NEW"), True,
          "embedded"),
    Path_("openai /v1/embeddings for query", "openai", "/v1/embeddings", ("query", QUESTION, "-c", "docs"), True,
          "pump.txt"),
]
CASES = [(path, kind, times) for path, kind in itertools.product(PATHS, FAULTS)
         for times in ((None, 1) if kind in ("drop", "503") else (None,))]


@dataclass
class Servers:
    ollama: FakeOllama
    openai: FakeOpenAI
    home: Path
    docs: Path

    def flags(self, server: str) -> tuple[str, ...]:
        if server == "ollama":
            return FAST
        return (*FAST, "--set", "llm.provider=openai", "--set", f"llm.base_url={self.openai.url}",
                "--set", "llm.model=served-model", "--set", "embed.provider=openai",
                "--set", f"embed.base_url={self.openai.url}", "--set", "embed.model=embed-model")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    ollama, openai = FakeOllama().start(), FakeOpenAI().start()
    root = tmp_path_factory.mktemp("faults")
    docs = root / "docs"
    docs.mkdir()
    (docs / "pump.txt").write_text("A centrifugal pump must be primed before it starts; it starts at 3 bar.")
    (docs / "roof.txt").write_text("Clay tiles shed rain into the gutters along the eaves.")
    made = Servers(ollama, openai, root, docs)
    for server in ("ollama", "openai"):
        home = root / server
        done = cli(home, ollama.url, *made.flags(server), "ingest", str(docs), "-c", "docs")
        assert done.returncode == 0, done.stderr
    yield made
    ollama.stop()
    openai.stop()


@pytest.mark.parametrize(("path", "kind", "times"), CASES,
                         ids=[f"{p.name}-{k}{'-once' if t else ''}" for p, k, t in CASES])
def test_a_hostile_server_gives_one_clear_line_or_is_recovered_from(servers: Servers, path: Path_, kind: str,
                                                                     times: int | None) -> None:
    fake = servers.ollama if path.server == "ollama" else servers.openai
    fake.faults.clear()
    command = [str(servers.docs) if a == "DOCS" else f"c{len(CASES)}{id(kind)}" if a == "NEW" else a
               for a in path.command]
    home = servers.home / path.server
    fake.faults.inject(path.path, kind, times)
    try:
        done = cli(home, servers.ollama.url, *servers.flags(path.server), *path.sets, *command, timeout=180)
    finally:
        injected = fake.faults.injected
        fake.faults.clear()
    output = done.stdout + done.stderr
    print(f"{path.name} {kind} x{times or 'all'}: rc {done.returncode}; injected {injected}\n{output[-1500:]}")
    assert injected, "the command never called the faulty path"
    assert "Traceback" not in output and done.returncode in (0, 1), output
    if times == 1 and path.retried:
        assert done.returncode == 0 and path.done in output, output
    if path.path == "/api/show" and kind == "drop" and times is None:       # what failed, in its own words
        assert "dropped during /api/show" in output and "during the answer" not in output, output
    errors = [line for line in done.stderr.splitlines() if line.startswith("ragtui:")
              and not line.startswith(("ragtui: warning:", "ragtui: info:", "ragtui: session "))]
    assert len(errors) <= 1, done.stderr
    assert all(len(line) < 600 for line in output.splitlines()), output
