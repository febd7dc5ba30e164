"""The chat models behind annotation and synthesis: deltas and stop reasons, Ollama's one-line errors,
the client each model closes, and the clear error when the optional OpenAI package is missing."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from ragtui.config import ConfigError, Settings
from ragtui.errors import RagtuiError
from ragtui.llm.chat import LLMError
from ragtui.llm.providers import synthesis_model
from tests.fake_ollama import FakeOllama, Reply

QUESTION = [("user", "How do pumps start?")]


async def test_ollama_streams_the_answer_and_ends_with_the_stop_reason(make_settings: Callable[..., Settings],
                                                                       fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: Reply.text("Pumps start at 3 bar.")
    model = await synthesis_model(make_settings())
    try:
        deltas = [d async for d in model.stream(QUESTION)]
        assert await model.complete(QUESTION) == ("Pumps start at 3 bar.", "stop")
    finally:
        await model.aclose()
    assert "".join(d.text for d in deltas) == "Pumps start at 3 bar."
    assert deltas[-1].stop_reason == "stop" and all(d.stop_reason is None for d in deltas[:-1])


async def test_ollama_error_inside_the_stream_is_one_line(make_settings: Callable[..., Settings],
                                                          fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: Reply(pieces=["a ", "b "], error_after=1, error="out of\nmemory")
    model = await synthesis_model(make_settings())
    try:
        with pytest.raises(LLMError) as err:
            await model.complete(QUESTION)
    finally:
        await model.aclose()
    assert str(err.value) == f"{fake_ollama.url} reported an error from chat mid-answer: out of memory"
    assert isinstance(err.value, RagtuiError)


async def test_aclose_closes_the_client_the_model_opened(make_settings: Callable[..., Settings],
                                                         fake_ollama: FakeOllama) -> None:
    model = await synthesis_model(make_settings())
    await model.aclose()
    with pytest.raises(LLMError, match="client has been closed"):
        await model.complete(QUESTION)
    assert fake_ollama.calls("/api/chat") == []


async def test_openai_provider_without_its_package_says_what_to_install(
        make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_index.llms.openai_like", None)   # import fails as if not installed
    settings = make_settings("llm.provider=openai", "llm.base_url=http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError) as err:
        await synthesis_model(settings)
    assert str(err.value) == ('config error: llm.provider = "openai" needs the optional package '
                              "llama-index-llms-openai-like: pip install 'ragtui[openai]'")
