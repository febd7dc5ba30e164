"""Chat models for annotation and synthesis, built on LlamaIndex's LLM classes.

Two providers: Ollama (the native `Ollama` class, default) and an OpenAI-compatible
server (vLLM, llama.cpp server, LM Studio) through LlamaIndex's `OpenAILike`, an
optional install (`pip install 'ragtui[openai]'`), so the OpenAI SDK is not pulled in
for Ollama users.

LlamaIndex ignores per-call kwargs (notes §6), so each role gets its own instance
with fixed options. The context window is always set explicitly: left at -1 the
Ollama class makes a blocking /api/show call before the first request, and without
`num_ctx` Ollama's small default silently truncates long prompts (llama_index #13139).
Every failure is turned into an `LLMError` whose message fits on one line and says
what to do.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from ragtui.config import Settings

DEFAULT_CONTEXT_WINDOW = 8192     # when the model's info does not say (spec 3)
ANNOTATION_NUM_CTX = 4096         # 1,200 chars of extract + prompt + 200 output tokens fit easily
NUM_CTX_STEP = 4096               # num_ctx grows in these steps: each change makes Ollama reload the model
PROMPT_OVERHEAD = 2000            # tokens for instructions and chat template (RAGWeed 3g's overhead)
CHARS_PER_TOKEN = 3.5             # RAGWeed 3g's estimate
SHOW_TIMEOUT = 10.0


class LLMError(Exception):
    """An LLM call that failed; the message names where, why, and the fix."""


@dataclass(frozen=True)
class Delta:
    """A piece of streamed text; the last one carries why the model stopped."""

    text: str
    stop_reason: str | None = None    # "stop" | "length" | ... on the final piece only


def fitted_num_ctx(window: int, messages: Sequence[tuple[str, str]], reserve: int) -> int:
    """num_ctx for this request: the prompt's estimated tokens plus `reserve`, in NUM_CTX_STEP steps, at most
    the window. Never the whole window by default: a model reporting 128k would make Ollama reserve memory
    for all of it on every answer."""
    prompt = math.ceil(sum(len(text) for _, text in messages) / CHARS_PER_TOKEN)
    return min(window, _steps(prompt + reserve))


def _steps(tokens: int) -> int:
    return max(1, math.ceil(tokens / NUM_CTX_STEP)) * NUM_CTX_STEP


class ChatModel:
    """One model with fixed options, streaming deltas and normalising errors.

    `context_window` is what the packing budget is cut from; `num_ctx` is what each
    request tells Ollama to allocate (see `fitted`).
    """

    def __init__(self, llm: Any, *, provider: str, model: str, where: str, context_window: int,
                 timeout: float, num_ctx: int | None = None,
                 rebuild: Callable[[int], ChatModel] | None = None) -> None:
        self.llm = llm
        self.provider = provider
        self.model = model
        self.where = where
        self.context_window = context_window
        self.num_ctx = num_ctx or context_window
        self.timeout = timeout
        self._rebuild = rebuild

    def fitted(self, messages: Sequence[tuple[str, str]], reserve: int) -> ChatModel:
        """This model with num_ctx grown to fit `messages` plus `reserve` output tokens (self if it already fits)."""
        need = fitted_num_ctx(self.context_window, messages, reserve)
        if self._rebuild is None or need <= self.num_ctx:
            return self
        return self._rebuild(need)

    async def stream(self, messages: Sequence[tuple[str, str]]) -> AsyncIterator[Delta]:
        """Yield the answer piece by piece; raise LLMError when the call or the stream fails.

        Closing this generator (or cancelling its task) closes the HTTP stream at once.
        """
        from llama_index.core.llms import ChatMessage

        chat = [ChatMessage(role=role, content=content) for role, content in messages]
        finished = False
        try:
            gen = await self.llm.astream_chat(chat)
            try:
                async for chunk in gen:
                    reason = self._stop_reason(chunk.raw)
                    finished = finished or reason is not None
                    if chunk.delta or reason is not None:
                        yield Delta(chunk.delta or "", reason)
            finally:
                await gen.aclose()
        except (LLMError, asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as exc:
            raise self.explain(exc) from exc
        if not finished:
            raise LLMError(f"the answer from {self.model} at {self.where} ended without its final frame "
                           "(connection dropped?)")

    async def complete(self, messages: Sequence[tuple[str, str]]) -> tuple[str, str]:
        """The whole answer and its stop reason."""
        parts: list[str] = []
        reason = ""
        async for delta in self.stream(messages):
            parts.append(delta.text)
            reason = delta.stop_reason or reason
        return "".join(parts), reason

    async def aclose(self) -> None:
        """Close the HTTP client this model opened."""
        if self.provider == "ollama":
            client = getattr(getattr(self.llm, "_async_client", None), "_client", None)
            if client is not None:
                await client.aclose()
        else:
            client = getattr(self.llm, "_aclient", None)
            if client is not None:
                await client.close()
            http = getattr(self.llm, "async_http_client", None)
            if http is not None:
                await http.aclose()

    def _stop_reason(self, raw: Any) -> str | None:
        if self.provider == "ollama":
            if isinstance(raw, dict) and raw.get("done"):
                return str(raw.get("done_reason") or "stop")
            return None
        choices = getattr(raw, "choices", None) or []
        reason = getattr(choices[0], "finish_reason", None) if choices else None
        return str(reason) if reason else None

    def explain(self, exc: BaseException) -> LLMError:
        """One line for any failure of a call to this model."""
        name = type(exc).__name__
        status = getattr(exc, "status_code", None)
        if isinstance(exc, httpx.TimeoutException) or name in ("APITimeoutError", "TimeoutError"):
            return LLMError(f"no answer from {self.model} at {self.where} within {self.timeout:g} s "
                            "(llm.request_timeout); raise it for slow GPUs")
        if isinstance(exc, httpx.ConnectError | ConnectionError) or name == "APIConnectionError":
            what = "Ollama" if self.provider == "ollama" else "the LLM server"
            key = "[ollama] host" if self.provider == "ollama" else "[llm] base_url"
            return LLMError(f"{what} is not reachable at {self.where}; start it, or point {key} at it")
        if status == 404:
            hint = f"run `ollama pull {self.model}`" if self.provider == "ollama" else \
                "check [llm] model against the server's /models"
            return LLMError(f"model {self.model!r} is not available at {self.where}: {hint}")
        if status is not None:
            detail = _one_line(getattr(exc, "error", None) or getattr(exc, "message", None) or str(exc))
            if isinstance(status, int) and status >= 400:
                return LLMError(f"{self.where} answered HTTP {status} for {self.model}: {detail}")
            return LLMError(f"{self.where} reported an error from {self.model} mid-answer: {detail}")
        if isinstance(exc, json.JSONDecodeError):
            return LLMError(f"malformed response stream from {self.where} ({exc.msg})")
        if isinstance(exc, httpx.TransportError):
            return LLMError(f"connection to {self.where} dropped during the answer ({name})")
        return LLMError(f"{self.model} at {self.where} failed: {name}: {_one_line(str(exc))}")


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def context_window(settings: Settings, model: str) -> int:
    """llm.context_window, or the model's "*.context_length" from /api/show, else 8192.

    For Ollama it always asks /api/show, which doubles as the "is this model pulled?"
    check: a missing model raises LLMError with the `ollama pull` hint before any
    work starts.
    """
    if settings.llm.provider != "ollama":
        return settings.llm.context_window or DEFAULT_CONTEXT_WINDOW
    host = settings.ollama.host.rstrip("/")
    probe = ChatModel(None, provider="ollama", model=model, where=settings.ollama.host,
                      context_window=0, timeout=SHOW_TIMEOUT)
    try:
        async with httpx.AsyncClient(timeout=SHOW_TIMEOUT, trust_env=False) as client:
            response = await client.post(f"{host}/api/show", json={"model": model})
    except httpx.HTTPError as exc:
        raise probe.explain(exc) from None
    if response.status_code == 404:
        raise LLMError(f"model {model!r} is not available at {settings.ollama.host}: run `ollama pull {model}`")
    if response.status_code != 200:
        raise LLMError(f"{settings.ollama.host} answered HTTP {response.status_code} to /api/show for {model}")
    if settings.llm.context_window:
        return settings.llm.context_window
    try:
        info = response.json().get("model_info") or {}
    except ValueError:
        info = {}
    for key, value in info.items():
        if key.endswith(".context_length") and isinstance(value, int) and value > 0:
            return value
    return DEFAULT_CONTEXT_WINDOW


def build_model(settings: Settings, *, model: str, num_ctx: int, max_tokens: int, temperature: float,
                window: int | None = None) -> ChatModel:
    """A ChatModel with these fixed options for the configured provider; `window` (default num_ctx) is
    what packing may fill, and `fitted()` rebuilds it with a larger num_ctx up to that window."""
    timeout = settings.llm.request_timeout
    window = window or num_ctx

    def rebuild(n: int) -> ChatModel:
        return build_model(settings, model=model, num_ctx=n, max_tokens=max_tokens, temperature=temperature,
                           window=window)

    if settings.llm.provider == "ollama":
        from llama_index.llms.ollama import Ollama
        from ollama import AsyncClient

        client = AsyncClient(host=settings.ollama.host, timeout=timeout, trust_env=False)
        llm = Ollama(model=model, base_url=settings.ollama.host, request_timeout=timeout, context_window=num_ctx,
                     temperature=temperature, async_client=client,
                     additional_kwargs={"num_predict": max_tokens, "num_ctx": num_ctx})
        return ChatModel(llm, provider="ollama", model=model, where=settings.ollama.host,
                         context_window=window, num_ctx=num_ctx, timeout=timeout, rebuild=rebuild)
    try:
        from llama_index.llms.openai_like import OpenAILike
    except ImportError:
        from ragtui.config import ConfigError

        raise ConfigError('config error: llm.provider = "openai" needs the optional package '
                          "llama-index-llms-openai-like: pip install 'ragtui[openai]'") from None
    llm = OpenAILike(model=model, api_base=settings.llm.base_url, api_key=settings.llm.api_key or "none",
                     context_window=num_ctx, is_chat_model=True, max_tokens=max_tokens, temperature=temperature,
                     timeout=timeout, max_retries=0,
                     async_http_client=httpx.AsyncClient(timeout=timeout, trust_env=False))   # no proxies
    return ChatModel(llm, provider="openai", model=model, where=settings.llm.base_url,
                     context_window=window, num_ctx=num_ctx, timeout=timeout)


def base_num_ctx(settings: Settings, window: int) -> int:
    """The synthesis num_ctx before any prompt is known: room for the reserved answer and the overhead."""
    return min(window, _steps(settings.llm.max_tokens + PROMPT_OVERHEAD))


async def synthesis_model(settings: Settings, model: str | None = None) -> ChatModel:
    """The answer model: packing may fill the whole window; num_ctx starts small and is fitted per prompt."""
    name = model or settings.llm.model
    if not name:
        from ragtui.config import ConfigError

        raise ConfigError("config error: llm.model is not set: answers need a chat model "
                          "(set [llm] model, e.g. from `ollama list`)")
    window = await context_window(settings, name)
    return build_model(settings, model=name, num_ctx=base_num_ctx(settings, window), window=window,
                       max_tokens=settings.llm.max_tokens, temperature=settings.llm.temperature)


async def annotation_model(settings: Settings, model: str | None = None, *,
                           synthesis_model_name: str | None = None) -> ChatModel:
    """The annotation model: a small num_ctx, unless it is the synthesis model.

    Ollama reloads a model whenever num_ctx changes, so when both roles use the same
    model the annotator sends the synthesis model's starting num_ctx too.
    """
    name = model or settings.llm.annotator
    if not name:
        from ragtui.config import ConfigError

        raise ConfigError("config error: llm.annotation_model and llm.model are not set: annotation needs a "
                          "chat model (or turn it off with annotation.enabled = false)")
    window = await context_window(settings, name)
    same = name == (synthesis_model_name or settings.llm.model)
    num_ctx = base_num_ctx(settings, window) if same else min(window, ANNOTATION_NUM_CTX)
    return build_model(settings, model=name, num_ctx=num_ctx, max_tokens=settings.annotation.max_tokens,
                       temperature=settings.annotation.temperature)
