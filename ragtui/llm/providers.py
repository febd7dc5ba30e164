"""The chat models for the two roles, annotation and synthesis, for the configured `llm.provider`.

Ollama (`OllamaChat`, the default) or an OpenAI-compatible server
(`OpenAICompatibleChat`). The context window is always set explicitly: from
llm.context_window, else the model's own info, else 8192.
"""

from __future__ import annotations

import math

from ragtui.config import ConfigError, Settings
from ragtui.llm.chat import ChatModel, ReplyLimits
from ragtui.llm.ollama_chat import OllamaChat, context_length, num_ctx_steps
from ragtui.llm.openai_chat import OpenAICompatibleChat, check_served
from ragtui.tokens import PROMPT_OVERHEAD_TOKENS

DEFAULT_CONTEXT_WINDOW = 8192     # when the model's info does not say
ANNOTATION_NUM_CTX = 4096         # 1,200 chars of extract + prompt + 200 output tokens fit easily
JUDGE_MAX_TOKENS = 16             # "YES" or "NO", with room for a leading quote or asterisk
GRADER_MAX_TOKENS = 96            # a verdict word and one sentence of reason


async def context_window(settings: Settings, model: str) -> int:
    """llm.context_window, or the model's "*.context_length" from /api/show, else 8192.

    For Ollama it always asks /api/show, which doubles as the "is this model pulled?"
    check: a missing model raises LLMError with the `ollama pull` hint before any
    work starts.
    """
    if settings.llm.provider != "ollama":
        return settings.llm.context_window or DEFAULT_CONTEXT_WINDOW
    length = await context_length(settings.ollama.host, model, settings.ollama.timeout, settings.limits.max_reply_bytes,
                                  settings.llm.backoff)
    return settings.llm.context_window or length or DEFAULT_CONTEXT_WINDOW


async def served_window(settings: Settings, name: str, setting: str) -> int:
    """The context window of model `name`, after asking the server whether it has it (Ollama's /api/show, an
    OpenAI-compatible server's /models): a misspelt model given by `setting` fails with an error naming it."""
    if settings.llm.provider == "openai":
        await check_served(settings.llm.base_url, settings.llm.api_key, name, timeout=settings.llm.request_timeout,
                           max_bytes=settings.limits.max_reply_bytes, setting=setting, backoff=settings.llm.backoff)
    return await context_window(settings, name)


def _build_model(settings: Settings, *, model: str, num_ctx: int, max_tokens: int, temperature: float,
                window: int | None = None, timeout_s: float | None = None) -> ChatModel:
    """A ChatModel with these fixed options for the configured provider; `window` (default num_ctx) is
    what packing may fill, and Ollama's `fitted()` grows num_ctx up to it; `timeout_s` shortens
    llm.request_timeout and llm.reply_deadline_s."""
    timeout = min(settings.llm.request_timeout, timeout_s or math.inf)
    limits = ReplyLimits(max_bytes=settings.limits.max_reply_bytes,
                         deadline_s=min(settings.llm.reply_deadline_s, timeout_s or math.inf))
    if settings.llm.provider == "ollama":
        return OllamaChat(host=settings.ollama.host, model=model, context_window=window or num_ctx, num_ctx=num_ctx,
                          max_tokens=max_tokens, temperature=temperature, timeout=timeout, limits=limits)
    return OpenAICompatibleChat(base_url=settings.llm.base_url, api_key=settings.llm.api_key, model=model,
                                context_window=window or num_ctx, max_tokens=max_tokens, temperature=temperature,
                                timeout=timeout, limits=limits)


def _base_num_ctx(settings: Settings, window: int) -> int:
    """The synthesis num_ctx before any prompt is known: room for the reserved answer and the overhead."""
    return min(window, num_ctx_steps(settings.llm.max_tokens + PROMPT_OVERHEAD_TOKENS))


def model_not_set(how: str = "set [llm] model, e.g. from `ollama list`") -> ConfigError:
    """The error for a missing llm.model, `how` saying how to set it where the user is."""
    return ConfigError(f"config error: llm.model is not set: answers need a chat model ({how})")


async def synthesis_model(settings: Settings, model: str | None = None) -> ChatModel:
    """The answer model: packing may fill the whole window; num_ctx starts small and is fitted per prompt."""
    name = model or settings.llm.model
    if not name:
        raise model_not_set()
    window = await context_window(settings, name)
    return _build_model(settings, model=name, num_ctx=_base_num_ctx(settings, window), window=window,
                       max_tokens=settings.llm.max_tokens, temperature=settings.llm.temperature)


async def annotation_model(settings: Settings, model: str | None = None, *,
                           synthesis_model_name: str | None = None) -> ChatModel:
    """The annotation model: a small num_ctx, unless it is the synthesis model.

    Ollama reloads a model whenever num_ctx changes, so when both roles use the same
    model the annotator sends the synthesis model's starting num_ctx too.
    """
    name = model or settings.llm.annotator
    if not name:
        raise ConfigError("config error: llm.annotation_model and llm.model are not set: annotation needs a "
                          "chat model (or turn it off with annotation.enabled = false)")
    window = await context_window(settings, name)
    same = name == (synthesis_model_name or settings.llm.model)
    num_ctx = _base_num_ctx(settings, window) if same else min(window, ANNOTATION_NUM_CTX)
    return _build_model(settings, model=name, num_ctx=num_ctx, max_tokens=settings.annotation.max_tokens,
                       temperature=settings.annotation.temperature)


async def judge_model(settings: Settings, name: str, max_tokens: int = JUDGE_MAX_TOKENS) -> ChatModel:
    """The judge of `eval --answers --judge`: a one-word reply (faithfulness, JUDGE_MAX_TOKENS of output) or a
    verdict with its reason (correctness, GRADER_MAX_TOKENS), the annotator's small num_ctx, grown per prompt up
    to the model's window. Building it asks the server
    whether it has the model (`served_window`), so a misspelt judge fails here, before the work that needs it."""
    window = await served_window(settings, name, "--judge")
    return _build_model(settings, model=name, num_ctx=min(window, ANNOTATION_NUM_CTX), window=window,
                        max_tokens=max_tokens, temperature=0.0)


async def strategy_model(settings: Settings) -> ChatModel:
    """The model a retrieval strategy asks ([strategies]: alternative queries, HyDE passages): llm.model, with
    the synthesis model's starting num_ctx (so Ollama does not reload it), strategies.max_tokens of output,
    and strategies.timeout_s for the connection, each piece and the whole answer."""
    if not settings.llm.model:
        raise model_not_set()
    window = await context_window(settings, settings.llm.model)
    return _build_model(settings, model=settings.llm.model, num_ctx=_base_num_ctx(settings, window),
                        max_tokens=settings.strategies.max_tokens, temperature=settings.llm.temperature,
                        timeout_s=settings.strategies.timeout_s)
