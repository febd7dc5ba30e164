"""Ollama through LlamaIndex's native `Ollama` class, the default provider.

`num_ctx` is what each request tells Ollama to allocate, and it is always set: left
at -1 the class makes a blocking /api/show call before the first request, and
without `num_ctx` Ollama's small default silently truncates long prompts
(llama_index #13139). It grows in steps, because each change makes Ollama reload
the model.
"""

from __future__ import annotations

import math
from typing import Any

import httpx

from ragtui.llm.chat import (
    CallDropped,
    LlamaIndexChat,
    LLMError,
    Messages,
    ReplyLimits,
    Unreachable,
    status_failure,
    stream_failure,
    timed_out,
)
from ragtui.model.conversation import StopReason
from ragtui.ollama_api import context_length_of
from ragtui.retry import Backoff, ServerBusy, retried, transient
from ragtui.server_limits import ReplyLimit, ReplyTooSlow, async_client, loads
from ragtui.tokens import estimate_tokens

NUM_CTX_STEP = 4096     # num_ctx grows in these steps: each change makes Ollama reload the model


def num_ctx_steps(tokens: int) -> int:
    """`tokens` rounded up to whole NUM_CTX_STEPs (at least one)."""
    return max(1, math.ceil(tokens / NUM_CTX_STEP)) * NUM_CTX_STEP


def fitted_num_ctx(window: int, messages: Messages, reserve: int) -> int:
    """num_ctx for this request: the prompt's estimated tokens plus `reserve`, in NUM_CTX_STEP steps, at most
    the window. Never the whole window by default: a model reporting 128k would make Ollama reserve memory
    for all of it on every answer."""
    prompt = estimate_tokens("".join(text for _, text in messages))
    return min(window, num_ctx_steps(prompt + reserve))


class OllamaChat(LlamaIndexChat):
    """A model served by Ollama at `host`; `context_window` is what packing may fill, `num_ctx` what it allocates."""

    def __init__(self, *, host: str, model: str, context_window: int, num_ctx: int, max_tokens: int,
                 temperature: float, timeout: float, limits: ReplyLimits) -> None:
        from llama_index.llms.ollama import Ollama
        from ollama import AsyncClient

        super().__init__(model=model, where=host, context_window=context_window, timeout=timeout,
                         max_tokens=max_tokens, limits=limits)
        self.num_ctx = num_ctx
        self._temperature = temperature
        # no proxies: the transport is the only way out
        self._client = AsyncClient(host=host, timeout=timeout, trust_env=False, transport=self.transport())
        self._llm = Ollama(model=model, base_url=host, request_timeout=timeout, context_window=num_ctx,
                           temperature=temperature, async_client=self._client,
                           additional_kwargs={"num_predict": max_tokens, "num_ctx": num_ctx})

    def fitted(self, messages: Messages, reserve: int) -> OllamaChat:
        """This model with num_ctx grown to fit `messages` plus `reserve` output tokens (self if it already fits)."""
        need = fitted_num_ctx(self.context_window, messages, reserve)
        if need <= self.num_ctx:
            return self
        return OllamaChat(host=self.where, model=self.model, context_window=self.context_window, num_ctx=need,
                          max_tokens=self.max_tokens, temperature=self._temperature, timeout=self.timeout,
                          limits=self.limits)

    async def aclose(self) -> None:
        await self._client.close()

    def _stop_reason(self, raw: Any) -> StopReason | None:
        if isinstance(raw, dict) and raw.get("done"):
            return StopReason.parse(str(raw.get("done_reason") or "stop"))
        return None

    def _usage(self, raw: Any) -> tuple[int, int] | None:
        if isinstance(raw, dict) and raw.get("done"):
            prompt, output = raw.get("prompt_eval_count"), raw.get("eval_count")
            if isinstance(prompt, int) and isinstance(output, int):
                return prompt, output
        return None

    def explain(self, exc: Exception) -> LLMError:
        return explain(exc, model=self.model, host=self.where, timeout=self.timeout)


def explain(exc: Exception, *, model: str, host: str, timeout: float) -> LLMError:
    """One line for a failed call to Ollama: it wraps refused connections in ConnectionError and reports
    HTTP errors, and errors inside the stream (status -1), as ResponseError."""
    from ollama import ResponseError

    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return timed_out(model, host, timeout)
    if isinstance(exc, httpx.ConnectError | ConnectionError):
        return Unreachable(f"Ollama is not reachable at {host}; start it, or point [ollama] host at it")
    if isinstance(exc, ResponseError):
        if exc.status_code == 404:
            return _not_pulled(model, host)
        return status_failure(exc.status_code, exc.error or str(exc), model=model, where=host)
    return stream_failure(exc, model=model, where=host)


def _not_pulled(model: str, host: str) -> LLMError:
    return LLMError(f"model {model!r} is not available at {host}: run `ollama pull {model}`")


async def context_length(host: str, model: str, timeout: float, max_bytes: int, backoff: Backoff) -> int | None:
    """The model's "*.context_length" from /api/show, None when its info does not say.

    Doubles as the "is this model pulled?" check: a missing model raises LLMError with the `ollama pull`
    hint before any work starts. Each answer must come within `timeout` (ollama.timeout, named in the error:
    a short metadata call, not the generation that llm.request_timeout covers), and hold at most
    `max_bytes`. A dropped connection or a busy server (503, 429...) is asked again under `backoff` (llm.retries,
    llm.backoff_s): the call changes nothing on the server.
    """
    where = f"{host.rstrip('/')}/api/show"

    async def show() -> httpx.Response:
        async with async_client(timeout=timeout, max_bytes=max_bytes, deadline_s=timeout,
                                deadline_key="ollama.timeout") as client:
            response = await client.post(where, json={"model": model})
        return ServerBusy.check(response)

    try:
        response = await retried(show, backoff, transient)
    except (httpx.TimeoutException, ReplyTooSlow):
        raise LLMError(f"Ollama at {host} did not answer /api/show for {model} within {timeout:g} s "
                       "(ollama.timeout); raise it if Ollama is busy loading models") from None
    except ReplyLimit as exc:
        raise LLMError(str(exc)) from None
    except ServerBusy as exc:
        raise LLMError(f"{host} answered HTTP {exc.status} to /api/show for {model}{_tries(backoff)}") from None
    except (httpx.ConnectError, ConnectionError):
        raise Unreachable(f"Ollama is not reachable at {host}{_tries(backoff)}; start it, or point [ollama] host "
                          "at it") from None
    except httpx.HTTPError as exc:
        raise CallDropped(f"connection to {host} dropped during /api/show for {model} ({type(exc).__name__})"
                          f"{_tries(backoff)}") from None
    if response.status_code == 404:
        raise _not_pulled(model, host)
    if response.status_code != 200:
        raise LLMError(f"{host} answered HTTP {response.status_code} to /api/show for {model}")
    try:
        return context_length_of(loads(response.content, where))
    except ValueError:
        return None
    except ReplyLimit as exc:
        raise LLMError(str(exc)) from None


def _tries(backoff: Backoff) -> str:
    return f" (after {backoff.attempts} attempts, llm.retries)" if backoff.attempts > 1 else ""
