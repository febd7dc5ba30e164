"""`ragtui ingest FOLDER -c NAME --watch` in a process of its own, its output read line by line as it comes."""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.cli_run import command
from tests.signals import default_sigint


class WatchProcess:
    """A real watch: started fresh (`python -m ragtui`), so it gets signals as a user's would."""

    def __init__(self, tmp_path: Path, host: str, folder: Path, name: str, *extra: str) -> None:
        argv, env = command(tmp_path, host, "ingest", str(folder), "-c", name, "--watch", *extra)
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=default_sigint)
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, wanted: Callable[[str], bool], timeout: float) -> str:
        """The first line from now on that is `wanted`; AssertionError (with what it printed) after `timeout`."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            if wanted(line):
                return line
        raise AssertionError("no such line; it printed:\n" + "\n".join(self.lines) + "\n" + self.stderr_if_ended())

    def stderr_if_ended(self) -> str:
        return self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""

    def interrupt(self, timeout: float = 60) -> tuple[int, str]:
        """Ctrl-C: its exit status and the rest of its output."""
        self.proc.send_signal(signal.SIGINT)
        status = self.proc.wait(timeout=timeout)
        rest = []
        while True:
            try:
                line = self._queue.get(timeout=10)
            except queue.Empty:
                break
            if line is None:
                break
            rest.append(line)
        self.lines += rest
        return status, "\n".join(rest)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
