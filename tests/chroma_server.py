"""A real Chroma server (`chroma run`, shipped with the chromadb package) on loopback, for the tests of server mode.

One server per test session (its start costs seconds): each test keeps to collection names of its own. A test may
stop it and start it again on the same port and folder, as an operator restarting the team's server would; the next
test finds it running either way.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def chroma_executable() -> str | None:
    """The `chroma` CLI of this interpreter's environment (where pip installs chromadb's scripts), else on PATH."""
    return shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChromaServer:
    def __init__(self, exe: str, folder: Path) -> None:
        self.exe = exe
        self.folder = folder
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def settings(self) -> tuple[str, str]:
        """The `--set` overrides that point ragtui at this server."""
        return "chroma.host=127.0.0.1", f"chroma.port={self.port}"

    def cli_args(self) -> list[str]:
        return [arg for setting in self.settings for arg in ("--set", setting)]

    def start(self) -> None:
        """Start it (or do nothing while it runs) and wait for its heartbeat."""
        if self.proc is not None and self.proc.poll() is None:
            return
        log = open(self.folder / "server.log", "ab")  # noqa: SIM115 - the server process writes it while it runs
        self.proc = subprocess.Popen([self.exe, "run", "--host", "127.0.0.1", "--port", str(self.port),
                                      "--path", str(self.folder / "data")], stdout=log, stderr=log,
                                     env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
        log.close()
        deadline = time.monotonic() + 90
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = (self.folder / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"chroma run did not start on port {self.port}:\n{tail}")
            time.sleep(0.2)

    def stop(self) -> None:
        """Kill it, as a crash or an operator would; its port stays free for `start` to reuse."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        while self.answers():
            time.sleep(0.1)

    def answers(self) -> bool:
        try:
            url = f"http://127.0.0.1:{self.port}/api/v2/heartbeat"
            return httpx.get(url, timeout=2, trust_env=False).is_success
        except httpx.HTTPError:
            return False

    def client(self) -> object:
        """chromadb's own HTTP client of this server, to look behind ragtui's back."""
        import chromadb
        from chromadb.config import Settings as ChromaConfig

        return chromadb.HttpClient(host="127.0.0.1", port=self.port, settings=ChromaConfig(anonymized_telemetry=False))
