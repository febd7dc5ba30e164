"""Children that a test interrupts with SIGINT must not inherit an ignored SIGINT.

A shell runs background jobs with SIGINT ignored, and an ignored signal stays ignored across exec,
so a suite started in the background would send Ctrl-C to children that never see it.
"""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """`preexec_fn` for a child the test will interrupt: SIGINT back to its default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
