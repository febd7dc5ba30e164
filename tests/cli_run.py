"""The real `ragtui` CLI in a subprocess, as a user runs it: its own HOME and data dir inside the test's folder.

`cli` starts each process from a warm interpreter (tests/cli_zygote.py: a fork of one that has already imported
the heavy libraries, which costs a fresh `python -m ragtui` seconds of CPU each time); it is a process of its own
with its own environment, exit status, stdout and stderr. A test about how a process starts or ends (which
modules a command imports, signals, a crash, a full disk, a first run, the environment read at start) starts
`python -m ragtui` fresh: `command` gives its argv and environment, or `fresh_cli` runs it. TESTS_FRESH_CLI=1 in
the environment makes `cli` start every process fresh, to compare the two.
"""

from __future__ import annotations

import atexit
import json
import locale
import os
import queue
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


def run_ragtui(argv: list[str], env: dict[str, str], timeout: float = 120,
               errors: str = "strict") -> subprocess.CompletedProcess[str]:
    """`argv` (`python -m ragtui ...`) with the environment `env`, its output captured as text (decoded with
    `errors`, as subprocess.run's), from the warm interpreter where it can stand in for a fresh one: not when
    `env` sets something that a fresh interpreter reads only as it starts (PYTHON*, the locale)."""
    if os.environ.get("TESTS_FRESH_CLI") != "1" and argv[:3] == [sys.executable, "-m", "ragtui"] \
            and _starts_the_same(env):
        zygote = _zygote()
        if zygote.usable:
            return zygote.run(argv, env, timeout, errors)
    return subprocess.run(argv, capture_output=True, text=True, errors=errors, env=env, timeout=timeout, check=False)


def _starts_the_same(env: dict[str, str]) -> bool:
    def read_at_start(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
        return {k: v for k, v in environ.items() if k.startswith(("PYTHON", "LC_")) or k == "LANG"}

    return read_at_start(env) == read_at_start({**os.environ, "PYTHONPATH": str(ROOT)})


_STARTING = threading.Lock()
_started: list[Zygote] = []
# The processes the warm interpreters of this test process have run, and their CPU seconds (user and system),
# which no getrusage of this process counts: tests/cpu_profile.py reads them.
WARM_RUNS = {"processes": 0, "cpu_s": 0.0}


def close_zygotes() -> None:
    """End this test process's warm interpreter, waiting for it (so that its CPU is counted where this
    process's children are); the suite's end calls it (tests/conftest.py)."""
    with _STARTING:
        for zygote in _started:
            zygote.close()
        _started.clear()


def _zygote() -> Zygote:
    with _STARTING:
        if not _started or _started[0].ended:
            _started[:] = [Zygote()]
        return _started[0]


def _umask() -> int:
    """This process's umask, which a fresh child inherits, read without setting it where Linux shows it
    (os.umask sets one to read the old: a thread creating a file meanwhile would get that one)."""
    status = Path("/proc/self/status")
    for line in status.read_text().splitlines() if status.exists() else ():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class Zygote:
    """tests/cli_zygote.py, running for this test process (each pytest-xdist worker has its own). Test threads
    may run children through it at once: a reader thread hands each answer to the call waiting for it."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="ragtui-cli-zygote-"))
        self.log = self.folder / "zygote.log"
        self.count = 0
        self.ended = False
        self.lock = threading.Lock()           # the request pipe, the count and the table of waiting calls
        self.waiting: dict[int, queue.Queue[dict[str, Any] | None]] = {0: queue.Queue()}
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(self.folder / "home")}
        env = {k: v for k, v in env.items() if not k.startswith(("RAGTUI_", "XDG_"))}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.cli_zygote", str(self.log)], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        atexit.register(self.close)
        threading.Thread(target=self.read_answers, name="cli-zygote-answers", daemon=True).start()
        self.next(self.waiting[0], time.monotonic() + 300)
        # Had importing printed something (a library's warning), every fresh run would show it and no child
        # would: then each process starts fresh instead.
        self.usable = not self.log.read_text(errors="replace")

    def run(self, argv: list[str], env: dict[str, str], timeout: float,
            errors: str) -> subprocess.CompletedProcess[str]:
        with self.lock:
            if self.ended:
                raise RuntimeError(f"the CLI zygote ended:\n{self.log.read_text(errors='replace')[-3000:]}")
            self.count += 1
            n = self.count
            answers = self.waiting[n] = queue.Queue()
            out, err = self.folder / f"{n}.out", self.folder / f"{n}.err"
            request = {"id": n, "args": argv[3:], "env": env, "cwd": os.getcwd(), "umask": _umask(),
                       "stdout": str(out), "stderr": str(err)}
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
        try:
            deadline = time.monotonic() + timeout
            pid = self.next(answers, deadline)["pid"]
            try:
                ended = self.next(answers, deadline)
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                self.count_cpu(self.next(answers, None))
                raise subprocess.TimeoutExpired(argv, timeout, output=self.take(out, errors),
                                                stderr=self.take(err, errors)) from None
            self.count_cpu(ended)
            return subprocess.CompletedProcess(argv, ended["returncode"], self.take(out, errors),
                                               self.take(err, errors))
        finally:
            with self.lock:
                del self.waiting[n]

    def count_cpu(self, ended: dict[str, Any]) -> None:
        with self.lock:
            WARM_RUNS["processes"] += 1
            WARM_RUNS["cpu_s"] += ended["cpu_s"]

    def read_answers(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            with self.lock:
                self.waiting[message["id"]].put(message)
        with self.lock:
            self.ended = True
            for answers in self.waiting.values():
                answers.put(None)

    def next(self, answers: queue.Queue[dict[str, Any] | None], deadline: float | None) -> dict[str, Any]:
        try:
            message = answers.get(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError from None
        if message is None:
            raise RuntimeError(f"the CLI zygote ended:\n{self.log.read_text(errors='replace')[-3000:]}")
        return message

    @staticmethod
    def take(path: Path, errors: str) -> str:
        """A child's output as subprocess.run(text=True) gives it: the locale's encoding, universal newlines."""
        data = path.read_bytes() if path.exists() else b""
        path.unlink(missing_ok=True)
        text = data.decode(locale.getpreferredencoding(False), errors)
        return text.replace("\r\n", "\n").replace("\r", "\n")

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
