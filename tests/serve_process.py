"""A real `ragtui serve` in a subprocess on loopback, as a user starts it: the URL it prints (with its token),
its output so far, and the TUI processes it has started (its child processes)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parents[1]
PRINTED_URL = re.compile(r"ragtui serve: open (http://\S+) in a browser")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    proc: subprocess.Popen[str]
    port: int
    lines: list[str] = field(default_factory=list)
    url: str = ""                   # as printed, with ?token=

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token(self) -> str:
        return parse_qs(urlsplit(self.url).query)["token"][0]

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def tui_processes(self) -> list[int]:
        """The processes `serve` has started and that still run (one per session)."""
        found: list[int] = []
        for children in Path(f"/proc/{self.proc.pid}/task").glob("*/children"):
            found += [int(pid) for pid in children.read_text().split()]
        return found


def wait_until(condition: Callable[[], object], what: str, served: Served) -> None:
    deadline = time.monotonic() + 120          # a guard against hanging, not a timing check
    while not condition():
        assert served.proc.poll() is None, served.output
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}; serve output: {served.output[-4000:]}")
        time.sleep(0.1)


@contextmanager
def serve(data_dir: Path, ollama_url: str, *args: str, serve_args: Sequence[str] = ()) -> Iterator[Served]:
    """`ragtui serve SERVE_ARGS` on a free port (ARGS: global flags, before `serve`); stopped on exit."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "ragtui", "--config", os.devnull, "--data-dir", str(data_dir),
                             "--ollama-host", ollama_url, *args, "serve", "--port", str(port), *serve_args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    served = Served(proc, port)
    reader = threading.Thread(target=_pump, args=(proc, served.lines), daemon=True)
    reader.start()
    try:
        wait_until(lambda: PRINTED_URL.search(served.output), "serve never printed its URL", served)
        served.url = PRINTED_URL.search(served.output).group(1)  # type: ignore[union-attr]
        wait_until(lambda: _listens(port), f"serve never listened on {port}", served)
        yield served
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        reader.join(timeout=10)
        print("serve output:", served.output[-8000:])


def _pump(proc: subprocess.Popen[str], lines: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)


def _listens(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|P[^\x1b]*\x1b\\|.)")


class PageTerminal:
    """What the served app sends a browser page's terminal over its WebSocket, read as text without its escape
    sequences; `wait_for` polls it (a guard against hanging, not a timing check)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.received: list[bytes] = []
        page.on("websocket", lambda ws: ws.on(
            "framereceived", lambda frame: self.received.append(frame if isinstance(frame, bytes) else b"")))

    def text(self) -> str:
        return _ESCAPES.sub("", b"".join(self.received).decode("utf-8", "replace"))

    def wait_for(self, text: str, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while text not in self.text():
            if time.monotonic() > deadline:
                self.page.screenshot(path="/tmp/served_fail.png")
                raise AssertionError(f"{text!r} never reached the page: {self.text()[-3000:]!r}")
            self.page.wait_for_timeout(200)
