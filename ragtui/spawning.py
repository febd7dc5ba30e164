"""The processes ragtui starts beside its own (extraction workers, an ingest's vector process): multiprocessing's
"spawn" context, made safe to start from inside the TUI.

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
import sys
import threading
from multiprocessing.context import SpawnContext

_LOCK = threading.Lock()


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
