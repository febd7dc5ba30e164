"""The real `ragtui` CLI in a subprocess, as a user runs it: its own HOME and data dir inside the test's folder.

`cli` starts each process from a warm interpreter (tests/cli_zygote.py: a fork of one that has already imported
the heavy libraries, which costs a fresh `python -m ragtui` seconds of CPU each time); it is a process of its own
with its own environment, exit status, stdout and stderr. A test about the interpreter's start itself (which
modules a command imports, signals, a first run) starts `python -m ragtui` fresh: `command` gives its argv and
environment, or `fresh_cli` runs it. TESTS_FRESH_CLI=1 in the environment makes `cli` start every process fresh,
to compare the two.
"""

from __future__ import annotations

import atexit
import json
import locale
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def command(tmp_path: Path, host: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of `ragtui ARGS` against the Ollama at `host`, synonyms off, `chat` as the chat
    model (for a test that starts the process itself, to act while it runs)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home")}
    return [sys.executable, "-m", "ragtui", "--data-dir", str(tmp_path / "data"), "--ollama-host", host,
            "--set", "synonyms.enabled=false", "--set", "llm.model=chat", *args], env


def cli(tmp_path: Path, host: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`ragtui ARGS` against the Ollama at `host`, synonyms off, `chat` as the chat model."""
    argv, env = command(tmp_path, host, *args)
    return run_ragtui(argv, env, timeout)


def fresh_cli(tmp_path: Path, host: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`cli` in a fresh interpreter."""
    argv, env = command(tmp_path, host, *args)
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)


def run_ragtui(argv: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`argv` (`python -m ragtui ...`) with the environment `env`, its output captured as text, from the warm
    interpreter where it can stand in for a fresh one: not while another test thread holds it, nor when `env`
    sets something that a fresh interpreter reads only as it starts (PYTHON*, the locale)."""
    if os.environ.get("TESTS_FRESH_CLI") != "1" and argv[:3] == [sys.executable, "-m", "ragtui"] \
            and _starts_the_same(env) and _ZYGOTE_LOCK.acquire(blocking=False):
        try:
            zygote = _zygote()
            if zygote.usable:
                return zygote.run(argv, env, timeout)
        finally:
            _ZYGOTE_LOCK.release()
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)


def _starts_the_same(env: dict[str, str]) -> bool:
    def read_at_start(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
        return {k: v for k, v in environ.items() if k.startswith(("PYTHON", "LC_")) or k == "LANG"}

    return read_at_start(env) == read_at_start({**os.environ, "PYTHONPATH": str(ROOT)})


_ZYGOTE_LOCK = threading.Lock()
_started: list[Zygote] = []


def _zygote() -> Zygote:
    if not _started or _started[0].proc.poll() is not None:
        _started[:] = [Zygote()]
    return _started[0]


class Zygote:
    """tests/cli_zygote.py, running for this test process (each pytest-xdist worker has its own)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="ragtui-cli-zygote-"))
        self.log = self.folder / "zygote.log"
        self.count = 0
        self.pending = b""
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(self.folder / "home")}
        env = {k: v for k, v in env.items() if not k.startswith(("RAGTUI_", "XDG_"))}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.cli_zygote", str(self.log)], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        atexit.register(self.close)
        self.answer(time.monotonic() + 300)
        # Had importing printed something (a library's warning), every fresh run would show it and no child
        # would: then each process starts fresh instead.
        self.usable = not self.log.read_text(errors="replace")

    def run(self, argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
        self.count += 1
        out, err = self.folder / f"{self.count}.out", self.folder / f"{self.count}.err"
        request = {"args": argv[3:], "env": env, "cwd": os.getcwd(), "stdout": str(out), "stderr": str(err)}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        pid = self.answer(deadline)["pid"]
        try:
            returncode = self.answer(deadline)["returncode"]
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            self.answer(None)
            raise subprocess.TimeoutExpired(argv, timeout, output=self.take(out), stderr=self.take(err)) from None
        return subprocess.CompletedProcess(argv, returncode, self.take(out), self.take(err))

    def answer(self, deadline: float | None) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"the CLI zygote ended:\n{self.log.read_text(errors='replace')[-3000:]}")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    @staticmethod
    def take(path: Path) -> str:
        """A child's output as subprocess.run(text=True) gives it: the locale's encoding, universal newlines."""
        data = path.read_bytes() if path.exists() else b""
        path.unlink(missing_ok=True)
        return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
