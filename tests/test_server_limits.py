"""Limits on what servers send, through the real CLI in a subprocess against hostile servers on loopback: a
deadline for the whole reply, a byte cap on every reply, a token cap on a streamed answer, and one line for
JSON nested too deep. Each had no limit: a 1-token-per-second stream never ended, a server ignoring
max_tokens streamed 51.8 MB in 100 s, a 150 MB rerank reply took 614 MB, a nested one raised RecursionError."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama, Reply
from tests.fake_openai import FakeOpenAI
from tests.fake_rerank import FakeRerank
from tests.tui.test_session import write_corpus

MIB = 2**20
DISTINCT = " ".join(f"w{i}" for i in range(1000)) + " "   # an answer with no repeat in it
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


@pytest.fixture
def reranker() -> Iterator[FakeRerank]:
    server = FakeRerank().start()
    yield server
    server.stop()


def padded(prefix: bytes, total: int, suffix: bytes = b'"}') -> Callable[[], Iterator[bytes]]:
    """A valid JSON object of `total` bytes: `prefix` (which opens a string) padded with "x" to its end."""
    def parts() -> Iterator[bytes]:
        yield prefix
        left = total - len(prefix) - len(suffix)
        while left > 0:
            yield b"x" * min(MIB, left)
            left -= MIB
        yield suffix
    return parts


def nested(key: bytes, depth: int = 100_000) -> Callable[[], Iterator[bytes]]:
    return lambda: iter([b'{"' + key + b'": ' + b"[" * depth + b"]" * depth + b"}"])


def stderr_lines(done: object) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.strip()]  # type: ignore[attr-defined]


# --- the answer: OpenAI-compatible and Ollama -------------------------------------------------------------

def test_a_slow_drip_answer_hits_the_reply_deadline(ingested: Path, fake_ollama: FakeOllama,
                                                    fake_openai: FakeOpenAI) -> None:
    fake_openai.endless, fake_openai.drip_s = True, 0.5      # a piece every 0.5 s, forever: no read ever waits 8 s
    done = cli(ingested, fake_ollama.url, *OPENAI, "--set", f"llm.base_url={fake_openai.url}",
               "--set", "llm.request_timeout=8", "--set", "llm.reply_deadline_s=3", "ask", "how do pumps start",
               timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert (f"ragtui: synthesize failed: the answer from served-model: {fake_openai.url}/chat/completions did not "
            "finish its reply within 3 s; it was cut off (llm.reply_deadline_s)") in stderr_lines(done)
    assert fake_openai.hung_up.wait(10)


def test_an_answer_past_max_tokens_is_cut_and_marked_length(ingested: Path, fake_ollama: FakeOllama,
                                                            fake_openai: FakeOpenAI) -> None:
    fake_openai.endless = True                               # ignores max_tokens and never stops
    fake_openai.answer = DISTINCT                            # and does not loop (a loop stops as "repetition")
    done = cli(ingested, fake_ollama.url, *OPENAI, "--set", f"llm.base_url={fake_openai.url}",
               "--set", "llm.max_tokens=100", "ask", "--json", "how do pumps start", timeout=60)
    assert done.returncode == 0, done.stderr
    turn = json.loads(done.stdout)["turns"][-1]
    assert turn["stop_reason"] == "length"
    pieces = re.findall(r"\S+\s*", fake_openai.answer)
    assert turn["answer"] == "".join(itertools.islice(itertools.cycle(pieces), 100))   # max_tokens pieces
    assert fake_openai.hung_up.wait(10)
    # the stream was closed, not read on: what the server got out is what loopback's socket buffers hold (they
    # grow to a few MiB on a loaded machine) plus the answer, never the endless rest
    assert fake_openai.sent < 8 * MIB


def test_an_answer_of_padded_pieces_is_cut_at_the_byte_cap(ingested: Path, fake_ollama: FakeOllama,
                                                           fake_openai: FakeOpenAI) -> None:
    fake_openai.endless, fake_openai.padding = True, 64 * 1024     # few tokens, many bytes
    done = cli(ingested, fake_ollama.url, *OPENAI, "--set", f"llm.base_url={fake_openai.url}",
               "--set", "limits.max_reply_mb=1", "ask", "how do pumps start", timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert (f"ragtui: synthesize failed: the answer from served-model: {fake_openai.url}/chat/completions sent a "
            "reply larger than 1 MiB; it was cut off (limits.max_reply_mb)") in stderr_lines(done)
    assert fake_openai.sent < 16 * MIB                      # 1 MiB read, the rest in socket buffers


def test_an_ollama_answer_past_num_predict_is_cut_and_marked_length(ingested: Path,
                                                                    fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply(pieces=[f"w{i} " for i in range(20_000)], ignore_num_predict=True))   # no loop
    done = cli(ingested, fake_ollama.url, "--set", "llm.max_tokens=50", "ask", "--no-annotate", "--json",
               "how do pumps start", timeout=60)
    assert done.returncode == 0, done.stderr
    turn = json.loads(done.stdout)["turns"][-1]
    assert turn["stop_reason"] == "length" and turn["answer"].split() == [f"w{i}" for i in range(50)]
    assert fake_ollama.disconnects == 1                     # the client hung up on the rest


def test_an_ollama_answer_dripping_past_the_deadline_is_one_line(ingested: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply(pieces=["word "] * 1000, delay=0.5))
    done = cli(ingested, fake_ollama.url, "--set", "llm.reply_deadline_s=2", "ask", "--no-annotate",
               "how do pumps start", timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert (f"ragtui: synthesize failed: the answer from chat: {fake_ollama.url}/api/chat did not finish its reply "
            "within 2 s; it was cut off (llm.reply_deadline_s)") in stderr_lines(done)


# --- /api/show and /api/tags ------------------------------------------------------------------------------

def test_a_huge_api_show_reply_is_refused_in_one_line(ingested: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.show_parts = padded(b'{"model_info": {}, "license": "', 40 * MIB)
    done = cli(ingested, fake_ollama.url, "ask", "how do pumps start", timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "pumps.md" in done.stdout                                # retrieval still ran
    assert (f"{fake_ollama.url}/api/show sent a reply larger than 32 MiB; it was cut off (limits.max_reply_mb)"
            in stderr_lines(done)[-1])
    assert fake_ollama.sent < 40 * MIB


def test_a_deeply_nested_api_show_reply_is_one_line(ingested: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.show_parts = nested(b"model_info")
    done = cli(ingested, fake_ollama.url, "ask", "how do pumps start", timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert (f"{fake_ollama.url}/api/show sent JSON nested too deep to parse; the reply was refused"
            in stderr_lines(done)[-1])


@pytest.mark.parametrize(("parts", "reason"), [
    (padded(b'{"models": [], "pad": "', 40 * MIB), "sent a reply larger than 32 MiB; it was cut off "
                                                   "(limits.max_reply_mb)"),
    (nested(b"models"), "answered /api/tags with JSON nested too deep to parse"),
], ids=["huge", "nested"])
def test_a_hostile_api_tags_reply_is_one_line_in_doctor(tmp_path: Path, fake_ollama: FakeOllama,
                                                        parts: Callable[[], Iterator[bytes]], reason: str) -> None:
    fake_ollama.tags_parts = parts
    done = cli(tmp_path, fake_ollama.url, "doctor", timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1
    [line] = [line for line in done.stdout.splitlines() if re.match(r"FAIL\s+ollama\s", line)]
    assert reason in line, done.stdout
    assert fake_ollama.sent < 40 * MIB


# --- the reranker -----------------------------------------------------------------------------------------

def rerank_args(reranker: FakeRerank) -> tuple[str, ...]:
    return ("--set", "rerank.enabled=true", "--set", f"rerank.base_url={reranker.url}",
            "--set", "rerank.model=bge-reranker")


@pytest.mark.parametrize(("parts", "reason"), [
    (padded(b'{"results": [], "pad": "', 150 * MIB), "/rerank sent a reply larger than 32 MiB; it was cut off "
                                                     "(limits.max_reply_mb)"),
    (nested(b"results"), "/rerank sent JSON nested too deep to parse; the reply was refused"),
    (lambda: itertools.repeat(b"x" * 65536), "/rerank sent a reply larger than 32 MiB"),   # never ends
], ids=["huge", "nested", "endless"])
def test_a_hostile_rerank_reply_keeps_the_fused_order_with_one_line(ingested: Path, fake_ollama: FakeOllama,
                                                                    reranker: FakeRerank,
                                                                    parts: Callable[[], Iterator[bytes]],
                                                                    reason: str) -> None:
    reranker.parts = parts
    done = cli(ingested, fake_ollama.url, *rerank_args(reranker), "query", "how do pumps start", timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "pumps.md" in done.stdout
    [notice] = [line for line in done.stdout.splitlines() if "reranker" in line]
    assert f"note: The reranker at {reranker.url} gave no usable order ({reranker.url}{reason}" in notice, notice
    assert reranker.sent < 40 * MIB


def test_a_slow_drip_rerank_reply_hits_rerank_timeout(ingested: Path, fake_ollama: FakeOllama,
                                                      reranker: FakeRerank) -> None:
    def drip() -> Iterator[bytes]:
        import time
        for _ in range(1000):
            time.sleep(0.2)
            yield b" "

    reranker.parts = drip
    done = cli(ingested, fake_ollama.url, *rerank_args(reranker), "--set", "rerank.timeout=2", "query",
               "how do pumps start", timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    [notice] = [line for line in done.stdout.splitlines() if "reranker" in line]
    assert "gave no usable order (no answer within 2 s (rerank.timeout))" in notice


# --- embeddings -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "reason"), [
    (b'{"embeddings": [], "pad": "' + b"x" * (2 * MIB) + b'"}', "/api/embed sent a reply larger than 1 MiB"),
    (b'{"embeddings": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "sent JSON nested too deep to parse"),
], ids=["huge", "nested"])
def test_a_hostile_embedding_reply_skips_the_pass_with_one_line(tmp_path: Path, fake_ollama: FakeOllama,
                                                                raw: bytes, reason: str) -> None:
    fake_ollama.embed_body = lambda texts, dim: raw
    done = cli(tmp_path, fake_ollama.url, "--set", "limits.max_reply_mb=1", "ingest", str(write_corpus(tmp_path)),
               "-c", "docs", timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "unusable batch" in line]
    assert reason in line and "the nomic-embed-text pass is skipped, ingest continues" in line, line
