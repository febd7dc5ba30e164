"""What the chat calls under one piece of work cost: calls, prompt and output tokens.

`metered()` opens a meter for the code (and the tasks it starts) below it; every
`ChatModel` stream records itself into the meter open where it runs. Token counts
are the server's own when its final frame reports them (Ollama's
prompt_eval_count / eval_count, an OpenAI-compatible server's `usage`), else
estimated at characters / 3.5 (`ragtui.tokens`); `reported` counts the calls whose
figures came from the server (one that reports 0 prompt tokens has not counted them: estimated).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ragtui.tokens import estimate_tokens


@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    reported: int = 0            # calls whose token counts the server reported (the rest are estimates)


_METER: ContextVar[Usage | None] = ContextVar("ragtui_llm_usage", default=None)


@contextmanager
def metered(into: Usage | None = None) -> Iterator[Usage]:
    """A meter for the calls made inside the block (tasks started inside share it): a fresh one, or `into`, which
    goes on counting from where an earlier block left it."""
    usage = Usage() if into is None else into
    token = _METER.set(usage)
    try:
        yield usage
    finally:
        _METER.reset(token)


def record(messages: Sequence[tuple[str, str]], output: str, reported: tuple[int, int] | None) -> None:
    """One call into the open meter (nothing when none is open); `reported` is the server's (prompt, output)."""
    usage = _METER.get()
    if usage is None:
        return
    usage.calls += 1
    if reported is not None and reported[0] > 0:     # a server that says 0 prompt tokens did not count them
        usage.reported += 1
        usage.prompt_tokens += reported[0]
        usage.output_tokens += reported[1]
    else:
        usage.prompt_tokens += estimate_tokens("".join(text for _, text in messages))
        usage.output_tokens += estimate_tokens(output)
