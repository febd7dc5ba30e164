"""The processes ragtui starts beside its own (extraction workers, an ingest's vector process and closing merge):
multiprocessing's "spawn" context, made safe to start from inside the TUI, and how such a process starts.

A process's first spawn also starts multiprocessing's resource tracker, handing it
`sys.stderr.fileno()` (multiprocessing/resource_tracker.py, `ensure_running`).
Under Textual, `sys.stderr` is the app's print capture, whose `fileno()` is -1,
and the spawn fails with "ValueError: bad value(s) in fds_to_keep". So the
tracker is started first with a stderr that has a real descriptor: /dev/null,
as nothing the tracker says may reach a terminal the TUI owns.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from multiprocessing.context import SpawnContext

_LOCK = threading.Lock()
_PR_SET_PDEATHSIG = 1          # prctl(2)


def spawn_context() -> SpawnContext:
    """The "spawn" context, with the resource tracker running (started here when `sys.stderr` has no descriptor)."""
    from multiprocessing import resource_tracker

    with _LOCK:
        try:
            usable = sys.stderr is not None and sys.stderr.fileno() >= 0
        except (AttributeError, OSError, ValueError):
            usable = False
        if not usable:
            captured = sys.stderr
            with open(os.devnull, "w") as devnull, contextlib.suppress(OSError, ValueError):
                sys.stderr = devnull
                try:
                    resource_tracker.ensure_running()
                finally:
                    sys.stderr = captured
    return multiprocessing.get_context("spawn")


def start_as_child_of(parent: int) -> None:
    """The first call of a process ragtui spawned: it is killed when the process that started it dies (Linux's
    parent-death signal, sent when the starting thread ends; elsewhere the child sees its pipe close), exits at
    once if that happened already, leaves Ctrl-C to its parent (the terminal sends it to the whole process
    group) and prints nothing where the parent's TUI draws (its stdout and stderr, native code's included, go
    to /dev/null)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            os.dup2(devnull, fd)
    os.close(devnull)
