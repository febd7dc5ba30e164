"""How many times a call to a server is tried, and how long to wait in between: the one rule for embedding
batches (embed.retries, embed.backoff_s) and LLM calls (llm.retries, llm.backoff_s).

Exponential backoff: `attempts` tries in all, the first included; before the k-th retry a pause of
base_s x 2^(k-1), so a server that is restarting or busy gets a doubling breather rather than a burst of
retries ("Exponential Backoff And Jitter", AWS Architecture Blog, 2015).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """`attempts` tries of one call in all (at least 1: no retry); `base_s` seconds before the first retry."""

    attempts: int
    base_s: float

    def pause(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1 is the first retry; 0 or less waits for nothing)."""
        return self.base_s * 2 ** (retry - 1) if retry > 0 else 0.0


BUSY_STATUSES = frozenset({429, 502, 503, 504})


def busy_status(status: int) -> bool:
    """Does this HTTP status say "try again later"? 429 (too many requests), 503 (unavailable: overloaded or
    starting), 502 and 504 (a proxy in front could not reach it), RFC 9110 section 15.6 and RFC 6585. A 500
    is not: an internal error (a model too big for memory) comes back the same."""
    return status in BUSY_STATUSES


class ServerBusy(Exception):
    """A server answered with a status that says "try again later" (`busy_status`)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status

    @staticmethod
    def check(response: httpx.Response) -> httpx.Response:
        """The response, unless its status says to try again (then ServerBusy)."""
        if busy_status(response.status_code):
            raise ServerBusy(response.status_code)
        return response


def transient(exc: BaseException) -> bool:
    """A failure another try may not meet: a dropped or refused connection, a busy or restarting server (a
    client library's error carrying a `busy_status` as its `status_code`, as the ollama and openai packages'
    do). A timeout is not: it has already waited its whole deadline."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and busy_status(status):
        return True
    return isinstance(exc, ServerBusy) or (isinstance(exc, httpx.TransportError | ConnectionError)
                                           and not isinstance(exc, httpx.TimeoutException))


async def retried(call: Callable[[], Awaitable[T]], backoff: Backoff,
                  transient: Callable[[BaseException], bool]) -> T:
    """`call()`, asked again after an exception that `transient` says another try may not meet (a dropped
    connection, a busy server's 503), at most `backoff.attempts` tries with its pauses; the last exception,
    or any other, is raised as it came. Only for calls that change nothing on the server (idempotent)."""
    attempt = 1
    while True:
        try:
            return await call()
        except Exception as exc:
            if attempt >= backoff.attempts or not transient(exc):
                raise
        await asyncio.sleep(backoff.pause(attempt))
        attempt += 1
