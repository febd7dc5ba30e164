"""`ragtui serve` against a hostile browser and whoever else reaches its port: a real `ragtui serve` on loopback,
driven by a real WebSocket client (aiohttp's) and raw sockets.

A session that asks for a terminal of 1e9 x 1e9 cells (in the URL and in `resize` messages) gets one of at
most 500 x 200, its TUI stays small, and its process ends within seconds of its socket closing, freeing its slot;
malformed messages are dropped with one line; the log never holds the token or a traceback, and a flood of bad
requests cannot fill it; a port in use is one error, with no URL printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from ragtui.serve.logs import QUOTA
from tests.fake_ollama import FakeOllama
from tests.serve_process import ROOT, Served, serve, wait_until
from tests.test_serve_guard import first_frame

HUGE = 1_000_000_000
# A served TUI whose engine has loaded holds about 300 MB however small its terminal: its libraries alone take 262
# MB (heavy.load through pymupdf, measured by ru_maxrss on this machine), so the bound says "not gigabytes" (an
# unclamped 1e9 x 1e9 session grew to 3.9-6 GB) with room for the largest terminal the clamp allows.
MAX_RSS_MB = 400
HOSTILE_MESSAGES = [
    "not json", "{}", "[]", "[1, 2]", '"stdin"', '["stdin", 5]', '["stdin"]', '["resize", "big"]',
    '["resize", {"width": "9", "height": 9}]', '["resize", {"width": true, "height": 1}]',
    '["ping", {"a": 1}]', '["ping", "' + "x" * 5000 + '"]', "[" * 100_000 + "]" * 100_000,
    '["nonsense", 1]',
]
HOSTILE_SIZES = [{"width": HUGE, "height": HUGE}, {"width": 10 ** 400, "height": -(10 ** 400)},
                 {"width": 3000, "height": 3000}, {"width": HUGE, "height": HUGE}]


@pytest.fixture
def served(tmp_path: Path, fake_ollama: FakeOllama) -> Iterator[Served]:
    with serve(tmp_path / "data", fake_ollama.url, "--set", "serve.max_sessions=1") as server:
        yield server


def rss_mb(pid: int) -> float:
    """The resident memory of the process and every process under it, in MB (0 once it is gone)."""
    total = 0.0
    for one in [pid, *descendants(pid)]:
        try:
            status = Path(f"/proc/{one}/status").read_text()
        except OSError:
            continue
        found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        total += int(found.group(1)) / 1024 if found else 0
    return total


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            for child in children.read_text().split():
                found += [int(child), *descendants(int(child))]
        except OSError:
            continue
    return found


def environment(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode().split("=", 1) for item in raw.split(b"\0") if b"=" in item)


def test_a_huge_terminal_is_clamped_and_the_process_ends_with_its_socket(served: Served) -> None:
    async def scenario() -> None:
        url = f"{served.origin}/ws?token={served.token}&width={HUGE}&height={HUGE}"
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(url, origin=served.origin, max_msg_size=0) as ws:
                assert await first_frame(ws)
                (tui,) = served.tui_processes()
                size = environment(tui)
                assert (size["COLUMNS"], size["ROWS"]) == ("500", "200")
                for size in HOSTILE_SIZES:
                    await ws.send_str(json.dumps(["resize", size]))
                for message in HOSTILE_MESSAGES:
                    await ws.send_str(message)
                await ws.send_str(json.dumps(["ping", "still here"]))
                while (reply := await ws.receive(timeout=120)).type is not aiohttp.WSMsgType.TEXT \
                        or "still here" not in reply.data:
                    assert reply.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), reply
                peak, until = 0.0, time.monotonic() + 8        # the TUI repaints at its new size meanwhile
                while time.monotonic() < until:
                    peak = max(peak, rss_mb(tui))
                    with contextlib.suppress(TimeoutError):     # keep reading what it paints
                        await ws.receive(timeout=0.2)
                assert 0 < peak < MAX_RSS_MB, f"the served TUI reached {peak:.0f} MB"
            closed = time.monotonic()
            wait_until(lambda: not served.tui_processes(), "the closed session's TUI never ended", served)
            ended = time.monotonic() - closed
            print(f"the TUI's peak RSS at 1e9 x 1e9 asked: {peak:.0f} MB; ended {ended:.1f} s after its socket closed")
            assert ended < 10, "the TUI outlived its socket by more than a few seconds"
            assert not Path(f"/proc/{tui}").exists()
            async with http.ws_connect(f"{served.origin}/ws?token={served.token}", origin=served.origin) as ws:
                assert await first_frame(ws)          # the slot is free again (serve.max_sessions = 1)

    asyncio.run(scenario())
    wait_until(lambda: "messages that are not textual-serve's" in served.output, "no line about the drops", served)
    assert f"sent {len(HOSTILE_MESSAGES)} messages that are not textual-serve's; they were dropped" in served.output
    assert "Traceback" not in served.output and served.token not in served.output.replace(served.url, "")


def test_stopping_serve_ends_its_sessions(served: Served) -> None:
    async def scenario() -> int:
        async with aiohttp.ClientSession() as http, \
                http.ws_connect(f"{served.origin}/ws?token={served.token}", origin=served.origin) as ws:
            assert await first_frame(ws)
            (tui,) = served.tui_processes()
            served.proc.terminate()
            served.proc.wait(timeout=30)
            return tui

    tui = asyncio.run(scenario())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{tui}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{tui}").exists() or "zombie" in Path(f"/proc/{tui}/status").read_text()


def test_the_log_holds_no_token_no_traceback_and_no_flood(served: Served) -> None:
    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:
            for _ in range(3):
                async with http.get(served.url) as page:
                    assert page.status == 200
    asyncio.run(scenario())
    request_bytes = b"GET /?token=" + served.token.encode() + b"&secret=XYZZY HTTP/1.1\r\nX-Raw: PLUGH\r\n\r\n"
    for _ in range(3 * QUOTA):           # no Host header: a malformed HTTP/1.1 request
        with socket.create_connection(("127.0.0.1", served.port), timeout=30) as raw:
            raw.sendall(request_bytes)
            raw.recv(4096)
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as raw:
        raw.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
        raw.recv(4096)
    time.sleep(1)
    log = served.output.replace(served.url, "")
    assert served.token not in log and "XYZZY" not in log and "PLUGH" not in log
    assert "Traceback" not in log and "locals" not in log
    assert "GET / from 127.0.0.1: 200" in log
    lines = [line for line in log.splitlines() if line.strip()]
    assert len(lines) <= QUOTA + 5, log[-3000:]
    assert all(line.startswith("ragtui serve: ") for line in lines), log[-3000:]
    assert f"more than {QUOTA} log lines this minute" in log


def test_a_port_in_use_is_one_error_and_no_url(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "ragtui", "--config", os.devnull, "--data-dir",
                               str(tmp_path / "data"), "--ollama-host", fake_ollama.url, "serve", "--port", str(port)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done
    assert "http://" not in done.stdout + done.stderr and "Traceback" not in done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "in use" in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2, done.stderr
