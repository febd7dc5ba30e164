"""An OpenAI-compatible server (vLLM, llama.cpp server, LM Studio) through LlamaIndex's `OpenAILike`.

`OpenAILike` is an optional install (`pip install 'ragtui[openai]'`), so the OpenAI
SDK is not pulled in for Ollama users; it is imported only when this provider is
configured.
"""

from __future__ import annotations

from typing import Any

import httpx

from ragtui import heavy
from ragtui.config import ConfigError
from ragtui.config_sections import Secret
from ragtui.llm.chat import (
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
from ragtui.retry import Backoff, ServerBusy, retried, transient
from ragtui.server_limits import ReplyLimit, async_client, loads


class OpenAICompatibleChat(LlamaIndexChat):
    """A model served at `base_url` (the server's /v1 root). The server sizes its own context, so `fitted`
    has nothing to grow."""

    def __init__(self, *, base_url: str, api_key: Secret, model: str, context_window: int, max_tokens: int,
                 temperature: float, timeout: float, limits: ReplyLimits) -> None:
        try:
            heavy.load("llama_index.llms.openai_like")
            from llama_index.llms.openai_like import OpenAILike
        except ImportError:
            raise ConfigError('config error: llm.provider = "openai" needs the optional package '
                              "llama-index-llms-openai-like: pip install 'ragtui[openai]'") from None

        super().__init__(model=model, where=base_url, context_window=context_window, timeout=timeout,
                         max_tokens=max_tokens, limits=limits)
        # no proxies: the transport is the only way out
        self._http = httpx.AsyncClient(timeout=timeout, trust_env=False, transport=self.transport())
        # mypy derives OpenAILike's __init__ from its pydantic fields and misses the inherited
        # OpenAI.__init__, which takes async_http_client; whether it does depends on which llama-index packages
        # are installed beside it, hence unused-ignore.
        self._llm = OpenAILike(  # type: ignore[call-arg, unused-ignore]
            model=model, api_base=base_url, api_key=api_key.reveal() or "none", context_window=context_window,
            is_chat_model=True, max_tokens=max_tokens, temperature=temperature, timeout=timeout, max_retries=0,
            async_http_client=self._http)

    def fitted(self, messages: Messages, reserve: int) -> OpenAICompatibleChat:
        return self

    async def aclose(self) -> None:
        await self._http.aclose()

    def _stop_reason(self, raw: Any) -> StopReason | None:
        choices = getattr(raw, "choices", None) or []
        reason = getattr(choices[0], "finish_reason", None) if choices else None
        return StopReason.parse(str(reason)) if reason else None

    def _usage(self, raw: Any) -> tuple[int, int] | None:
        found = getattr(raw, "usage", None)
        prompt, output = getattr(found, "prompt_tokens", None), getattr(found, "completion_tokens", None)
        return (prompt, output) if isinstance(prompt, int) and isinstance(output, int) else None

    def explain(self, exc: Exception) -> LLMError:
        """The OpenAI SDK wraps timeouts, refused connections and HTTP errors in its own classes; errors
        inside the stream and broken streams come through as they are."""
        import openai

        if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException | TimeoutError):
            return timed_out(self.model, self.where, self.timeout)
        if isinstance(exc, openai.APIConnectionError | httpx.ConnectError | ConnectionError):
            return Unreachable(f"the LLM server is not reachable at {self.where}; start it, or point [llm] "
                               "base_url at it")
        if isinstance(exc, openai.APIStatusError | openai.APIResponseValidationError):
            if exc.status_code == 404:
                return LLMError(f"model {self.model!r} is not available at {self.where}: check [llm] model "
                                "against the server's /models")
            return status_failure(exc.status_code, exc.message or str(exc), model=self.model, where=self.where)
        return stream_failure(exc, model=self.model, where=self.where)


def models_url(base_url: str) -> str:
    """An OpenAI-compatible server's list of the models it serves."""
    return base_url.rstrip("/") + "/models"


def served_ids(content: bytes, url: str) -> list[str]:
    """The model ids of a /models reply (a server's JSON, bounded by `loads`); raises ValueError, AttributeError
    or TypeError for a reply of another shape."""
    return [i for i in (m.get("id") for m in loads(content, url).get("data", [])) if isinstance(i, str)]


async def check_served(base_url: str, api_key: Secret, model: str, *, timeout: float, max_bytes: int,
                       setting: str, backoff: Backoff) -> None:
    """Whether the server's /models lists `model`, asked before any work that needs it starts: LLMError naming
    what it serves when it does not (`setting` says where the name came from), Unreachable when no server
    answers. A server that gives no readable list (not every one has /models) is not judged by it: the model's
    first call says what is wrong. A dropped connection or a busy server is asked again under `backoff`."""
    url = models_url(base_url)

    async def listed() -> httpx.Response:
        async with async_client(timeout=timeout, max_bytes=max_bytes, deadline_s=timeout,
                                deadline_key="llm.request_timeout") as client:
            return ServerBusy.check(await client.get(url, headers=api_key.bearer()))

    try:
        response = await retried(listed, backoff, transient)
        response.raise_for_status()
        served = served_ids(response.content, url)
    except (httpx.ConnectError, ConnectionError):
        raise Unreachable(f"the LLM server is not reachable at {base_url}; start it, or point [llm] base_url "
                          "at it") from None
    except (httpx.HTTPError, ReplyLimit, ValueError, AttributeError, TypeError, ServerBusy):
        return
    if model not in served:
        from ragtui.model_ids import served_list

        raise LLMError(f"model {model!r} is not served at {base_url}; it serves: {served_list(served)} (check "
                       f"{setting} against the server's /models)")
