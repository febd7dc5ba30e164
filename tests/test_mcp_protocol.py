"""`ragtui mcp` fed protocol garbage and left by its client: a real `ragtui mcp` subprocess spoken to line by line
over its standard input and output, as a client that is broken or gone would.

Every line that is not one JSON-RPC message gets a JSON-RPC error reply (-32700 parse error, -32600 invalid
request: https://www.jsonrpc.org/specification, section 5.1), so no client waits forever, and the server still
answers the next good request; a client that closes its end mid-call ends the server quietly, exit 0.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.cli_run import cli, command
from tests.fake_ollama import FakeOllama, Reply

INITIALIZE = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "garbage", "version": "0"}}}


REPLY_S = 30        # a reply slower than this is no reply (a guard against waiting forever, not a timing check)


class Mcp:
    """A `ragtui mcp` process, its reply lines read as they come."""

    def __init__(self, tmp_path: Path, ollama: FakeOllama, *flags: str, follow: bool = True) -> None:
        argv, env = command(tmp_path, ollama.url, *flags, "mcp")
        self.process = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.follow = follow
        if follow:      # else `reply` reads from the pipe itself, which the test may then close
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, line: bytes | dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(line).encode() if isinstance(line, dict) else line) + b"\n")
        self.process.stdin.flush()

    def reply(self, about: object = "") -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=REPLY_S) if self.follow else self.process.stdout.readline()  # type: ignore[union-attr]
        except queue.Empty:
            raise AssertionError(f"no reply within {REPLY_S} s to {about!r:.80}") from None
        answer = json.loads(line)
        assert isinstance(answer, dict)
        return answer

    def initialize(self) -> None:
        self.send(INITIALIZE)
        assert self.reply()["id"] == "init"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def test_garbage_lines_get_json_rpc_errors_and_the_server_goes_on(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    mcp = Mcp(tmp_path, fake_ollama)
    server = mcp.process
    try:
        mcp.initialize()
        garbage: list[tuple[bytes | dict[str, Any], int, Any]] = [
            (b"this is not json", -32700, None),
            (b"\xff\xfe\xfa invalid utf-8 \xc3", -32700, None),
            (b"[" * 100_000 + b"]" * 100_000, -32700, None),                         # nested past any parser
            (b'{"jsonrpc": "2.0", "id": 3, "method": "ping"' + b"," * 3, -32700, None),  # cut short
            (json.dumps([{"jsonrpc": "2.0", "id": 4, "method": "ping"}]).encode(), -32600, None),   # a batch
            (b"[]", -32600, None),
            (b"42", -32600, None),
            ({"jsonrpc": "2.0", "id": 5, "method": 17}, -32600, 5),
            ({"jsonrpc": "1.0", "id": "six", "method": "ping"}, -32600, "six"),
        ]
        for line, code, request_id in garbage:
            mcp.send(line)
            answer = mcp.reply(line)
            assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] == code, (line[:80], answer)
            assert answer["id"] == request_id, (line[:80], answer)
        mcp.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        assert mcp.reply() == {"jsonrpc": "2.0", "id": 7, "result": {}}
    finally:
        assert server.stdin is not None
        server.stdin.close()
        assert server.wait(timeout=60) == 0
        assert server.stderr is not None
        stderr = server.stderr.read().decode()
        assert "Traceback" not in stderr, stderr


def test_a_client_that_hangs_up_mid_call_ends_the_server_quietly(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pump.txt").write_text("A centrifugal pump must be primed before it starts.")
    assert cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", "plumbing").returncode == 0
    fake_ollama.responder = lambda body: Reply.text("The pump is primed [1].", delay=0.3)    # a call of seconds
    mcp = Mcp(tmp_path, fake_ollama, follow=False)
    server = mcp.process
    mcp.initialize()
    mcp.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "ask", "arguments": {"question": "how does a pump start"}}})
    deadline = time.monotonic() + 60            # a guard against hanging: wait until the call reaches the model
    while not fake_ollama.calls("/api/chat") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_ollama.calls("/api/chat")
    assert server.stdout is not None and server.stdin is not None
    server.stdin.close()
    server.stdout.close()                       # the client is gone: its reply has nowhere to go
    assert server.wait(timeout=60) == 0
    assert server.stderr is not None
    stderr = server.stderr.read().decode()
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
