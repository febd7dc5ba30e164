"""The one interface annotation and synthesis talk to: a `ChatModel` streams `Delta`s or raises `LLMError`.

Each provider is one small class (`OllamaChat`, `OpenAICompatibleChat`) over a
LlamaIndex LLM with fixed options (LlamaIndex's `Ollama.chat` builds the request
options from the instance's fields and drops other per-call keyword arguments).
Each owns the HTTP client it hands to LlamaIndex, says why its model stopped and
turns its own failures into one line that names where, why, and the fix.
`LlamaIndexChat` holds the streaming loop they share.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from ragtui.errors import RagtuiError
from ragtui.llm import usage
from ragtui.model.conversation import StopReason
from ragtui.retry import busy_status
from ragtui.server_limits import AnswerCap, BoundedTransport, ReplyLimit, too_deep

if TYPE_CHECKING:
    from llama_index.core.llms import LLM

Messages = Sequence[tuple[str, str]]   # (role, content) turns


class LLMError(RagtuiError):
    """An LLM call that failed; the message names where, why, and the fix."""


class CallDropped(LLMError):
    """The server could not be reached, ended the stream without its final frame, or answered that it is busy
    (an HTTP 503, 502, 504 or 429): the same call may work when asked again (`ragtui.llm.retries`). Nothing else is
    retried: a timeout, another HTTP error, an answer over a limit."""


class Unreachable(CallDropped):
    """The server refused or never answered the connection: nothing was cut, it may be starting up."""


@dataclass(frozen=True)
class Delta:
    """A piece of streamed text; the last one carries why the model stopped."""

    text: str
    stop_reason: StopReason | None = None    # on the final piece only


@dataclass(frozen=True)
class ReplyLimits:
    """What one answer may take: bytes (limits.max_reply_mb) and seconds for all of it (llm.reply_deadline_s)."""

    max_bytes: int
    deadline_s: float


class ChatModel(Protocol):
    """One model with fixed options. `context_window` is what the packing budget is cut from."""

    model: str
    where: str                        # the server it runs on, as the user configured it
    context_window: int

    def stream(self, messages: Messages) -> AsyncGenerator[Delta, None]:
        """Yield the answer piece by piece; raise LLMError when the call or the stream fails.

        Closing the generator (or cancelling its task) closes the HTTP stream at once.
        """
        ...

    async def complete(self, messages: Messages) -> tuple[str, StopReason]:
        """The whole answer and its stop reason."""
        ...

    def fitted(self, messages: Messages, reserve: int) -> ChatModel:
        """This model, or one sized to hold `messages` plus `reserve` answer tokens (the caller closes the old)."""
        ...

    async def aclose(self) -> None:
        """Close the HTTP client this model opened."""
        ...


class LlamaIndexChat(ABC):
    """The streaming loop over a LlamaIndex LLM; subclasses build `_llm` and map stop reasons and errors."""

    _llm: LLM

    def __init__(self, *, model: str, where: str, context_window: int, timeout: float, max_tokens: int,
                 limits: ReplyLimits) -> None:
        self.model = model
        self.where = where
        self.context_window = context_window
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.limits = limits

    def transport(self) -> BoundedTransport:
        """The transport under this model's HTTP client: its byte cap and whole-answer deadline."""
        return BoundedTransport(max_bytes=self.limits.max_bytes, deadline_s=self.limits.deadline_s,
                                deadline_key="llm.reply_deadline_s")

    async def stream(self, messages: Messages) -> AsyncGenerator[Delta, None]:
        """The answer's pieces; cut with stop reason LENGTH at about max_tokens when the server goes on past it."""
        finished = False
        cap = AnswerCap(self.max_tokens)
        written: list[str] = []
        reported: tuple[int, int] | None = None
        try:
            from llama_index.core.llms import ChatMessage

            gen = await self._llm.astream_chat([ChatMessage(role=role, content=text) for role, text in messages])
            try:
                async for chunk in gen:
                    text, over = cap.take(chunk.delta or "")
                    reason = StopReason.LENGTH if over else self._stop_reason(chunk.raw)
                    reported = self._usage(chunk.raw) or reported
                    finished = finished or reason is not None
                    written.append(text)
                    if text or reason is not None:
                        yield Delta(text, reason)
                    if over:
                        break
            finally:
                await gen.aclose()
                usage.record(messages, "".join(written), reported)
        except Exception as exc:
            limit = reply_limit(exc)
            raise (LLMError(f"the answer from {self.model}: {limit}") if limit else self.explain(exc)) from exc
        if not finished:
            raise CallDropped(f"the answer from {self.model} at {self.where} ended without its final frame "
                              "(connection dropped?)")

    async def complete(self, messages: Messages) -> tuple[str, StopReason]:
        parts: list[str] = []
        reason = StopReason.NONE
        async for delta in self.stream(messages):
            parts.append(delta.text)
            reason = delta.stop_reason or reason
        return "".join(parts), reason

    @abstractmethod
    def _stop_reason(self, raw: Any) -> StopReason | None:
        """Why the model stopped, from a streamed chunk's raw provider frame; None before the last one."""

    def _usage(self, raw: Any) -> tuple[int, int] | None:
        """(prompt tokens, output tokens) when a streamed chunk's raw frame reports them, else None."""
        return None

    @abstractmethod
    def explain(self, exc: Exception) -> LLMError:
        """One line for any failure of a call to this model."""


def reply_limit(exc: BaseException) -> ReplyLimit | None:
    """The limit that tripped under `exc`: a library may wrap what the transport raised (the OpenAI SDK turns
    any error before the reply's headers into APIConnectionError)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ReplyLimit):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def timed_out(model: str, where: str, timeout: float) -> LLMError:
    return LLMError(f"no answer from {model} at {where} within {timeout:g} s (llm.request_timeout); "
                    "raise it for slow GPUs")


def status_failure(status: int, detail: str, *, model: str, where: str) -> LLMError:
    """An error status from the server: an HTTP one, or one reported inside the stream (no HTTP status). A
    status that says "try again" (`ragtui.retry.busy_status`) is a CallDropped, asked again."""
    if busy_status(status):
        return CallDropped(f"{where} answered HTTP {status} for {model}: {_one_line(detail)}")
    if status >= 400:
        return LLMError(f"{where} answered HTTP {status} for {model}: {_one_line(detail)}")
    return LLMError(f"{where} reported an error from {model} mid-answer: {_one_line(detail)}")


def stream_failure(exc: Exception, *, model: str, where: str) -> LLMError:
    """What is left once a provider has named its own errors: a broken stream, or anything unforeseen."""
    name = type(exc).__name__
    if isinstance(exc, RecursionError):
        return LLMError(f"the answer from {model}: {too_deep(where)}")
    if isinstance(exc, json.JSONDecodeError):
        return LLMError(f"malformed response stream from {where} ({exc.msg})")
    if isinstance(exc, httpx.TransportError):
        return CallDropped(f"connection to {where} dropped during the answer ({name})")
    return LLMError(f"{model} at {where} failed: {name}: {_one_line(str(exc))}")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def refitted(model: ChatModel, messages: Messages, max_tokens: int) -> ChatModel:
    """The client to ask `messages` of: `model`, or one with the larger window they need (`model` then closed)."""
    fitted = model.fitted(messages, max_tokens)
    if fitted is not model:
        await model.aclose()
    return fitted
