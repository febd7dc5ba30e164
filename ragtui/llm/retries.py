"""LLM calls asked again when the server could not be reached or cut the stream (`CallDropped`), at most
llm.retries attempts in all with llm.backoff_s between them (`ragtui.retry.Backoff`, the rule embedding
shares).

What is asked again: a whole call whose text nobody has seen yet (`complete`: a follow-up's rewrite; the
text of a cut attempt is thrown away), and an answer stream cut before it yielded any text (`stream`). An
answer cut after some of its text was shown is not asked again: asking would write that text a second
time, so the cut is raised and the text so far stays the caller's. Each retry is announced by a `Retrying`
item before its pause, so a front end can say so in one line. Annotations are scheduled by
`ragtui.llm.annotate`, which retries a cut call alone first.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from ragtui.llm.chat import CallDropped, ChatModel, Delta, Messages
from ragtui.retry import Backoff


@dataclass(frozen=True)
class Retrying:
    """Attempt `attempt` of `attempts` follows, after `pause_s` seconds, because the last one was cut (`error`);
    `alone`: with no other call in flight."""

    error: str
    attempt: int
    attempts: int
    pause_s: float
    alone: bool = False

    def line(self, what: str) -> str:
        """One line saying that `what` (e.g. "the answer from MODEL") is asked again, and why."""
        how = (" alone" if self.alone else "") + (f" in {self.pause_s:g} s" if self.pause_s else "")
        return (f"{what} failed ({self.error}); asking again{how} (attempt {self.attempt} of {self.attempts}, "
                "llm.retries)")


def gave_up(exc: CallDropped, attempts: int) -> CallDropped:
    """The last cut of a call tried `attempts` times, saying so when that was more than once."""
    if attempts < 2:
        return exc
    return CallDropped(f"{exc} (after {attempts} attempts, llm.retries)")


async def stream(model: ChatModel, messages: Messages, backoff: Backoff) -> AsyncGenerator[Delta | Retrying, None]:
    """`model.stream(messages)`, asked again while a cut came before any text (see the module docstring)."""
    for attempt in range(1, backoff.attempts + 1):
        shown = False
        deltas = model.stream(messages)
        try:
            async for delta in deltas:
                shown = shown or bool(delta.text)
                yield delta
            return
        except CallDropped as exc:
            if shown or attempt == backoff.attempts:
                raise gave_up(exc, attempt) from exc
            pause = backoff.pause(attempt)
            yield Retrying(str(exc), attempt + 1, backoff.attempts, pause)
        finally:
            await deltas.aclose()
        await asyncio.sleep(pause)


@dataclass(frozen=True)
class Completed:
    """The whole text of a call that finished."""

    text: str


async def complete(model: ChatModel, messages: Messages,
                   backoff: Backoff) -> AsyncGenerator[Completed | Retrying, None]:
    """`model.complete(messages)`, asked again from scratch after any cut; the last item is `Completed`."""
    for attempt in range(1, backoff.attempts + 1):
        try:
            text, _ = await model.complete(messages)
        except CallDropped as exc:
            if attempt == backoff.attempts:
                raise gave_up(exc, attempt) from exc
            pause = backoff.pause(attempt)
            yield Retrying(str(exc), attempt + 1, backoff.attempts, pause)
            await asyncio.sleep(pause)
        else:
            yield Completed(text)
            return
