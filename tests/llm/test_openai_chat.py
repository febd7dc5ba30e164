"""llm.provider = "openai": the same session over an OpenAI-compatible server (vLLM, llama.cpp server)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from ragtui.config import Settings
from ragtui.events import StageFailed, SynthesisFinished
from ragtui.llm.chat import LLMError
from ragtui.llm.providers import synthesis_model
from tests.fake_openai import FakeOpenAI
from tests.model_habits import ANSWER, NEW_TEXT, restarts_when_continued
from tests.research_helpers import StaticRetrieval, new_session

pytest.importorskip("llama_index.llms.openai_like")


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def openai_settings(make_settings: Callable[..., Settings], server: FakeOpenAI, *extra: str) -> Settings:
    return make_settings("llm.provider=openai", f"llm.base_url={server.url}", "llm.model=served-model",
                         "annotation.enabled=false", *extra)


async def test_streams_and_stops_for_length(make_settings: Callable[..., Settings], fake_openai: FakeOpenAI) -> None:
    settings = openai_settings(make_settings, fake_openai, "llm.max_tokens=3")
    session = new_session(settings, "How do pumps start?", StaticRetrieval(["Pumps."]))
    events = [e async for e in session.run()]
    await session.aclose()
    finished = next(e for e in events if isinstance(e, SynthesisFinished))
    assert finished.text == "The pump starts " and finished.stop_reason == "length" and session.turn.truncated
    request = fake_openai.requests[-1]
    assert request["model"] == "served-model" and request["max_tokens"] == 3 and request["stream"] is True
    assert "[1] SOURCE: docs/file1.md [p.1]" in request["messages"][-1]["content"]

    fake_openai.answer = "starts at 3 bar [1]."          # repeats the last word; cut again after 3 words
    [e async for e in session.continue_answer()]
    assert session.answer == "The pump starts at 3 " and session.turn.stop_reason == "length"
    fake_openai.answer = "3 bar [1]."
    [e async for e in session.continue_answer()]
    await session.aclose()
    assert session.answer == "The pump starts at 3 bar [1]." and session.turn.stop_reason == "stop"
    assert [m["role"] for m in fake_openai.requests[-1]["messages"]] == ["system", "user", "assistant", "user"]


async def test_unknown_model_and_unreachable_server(make_settings: Callable[..., Settings],
                                                    fake_openai: FakeOpenAI) -> None:
    settings = openai_settings(make_settings, fake_openai, "llm.model=nope")
    session = new_session(settings, "q", StaticRetrieval(["Pumps."]))
    (failure,) = [e async for e in session.run() if isinstance(e, StageFailed)]
    assert "'nope' is not available" in failure.message and fake_openai.url in failure.message
    settings = settings.replace(llm__base_url="http://127.0.0.1:9/v1", llm__model="served-model")
    session = new_session(settings, "q", StaticRetrieval(["Pumps."]))
    (failure,) = [e async for e in session.run() if isinstance(e, StageFailed)]
    assert "not reachable at http://127.0.0.1:9/v1" in failure.message and "[llm] base_url" in failure.message


async def test_proxy_variables_are_ignored(make_settings: Callable[..., Settings], fake_openai: FakeOpenAI,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")   # a proxy that does not exist
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    session = new_session(openai_settings(make_settings, fake_openai), "q", StaticRetrieval(["Pumps."]))
    events = [e async for e in session.run()]
    await session.aclose()
    assert not any(isinstance(e, StageFailed) for e in events)
    assert fake_openai.requests and fake_openai.requests[-1]["model"] == "served-model"


async def _failure(settings: Settings) -> str:
    model = await synthesis_model(settings)
    try:
        with pytest.raises(LLMError) as err:
            await model.complete([("user", "How do pumps start?")])
    finally:
        await model.aclose()
    return str(err.value)


async def test_server_failures_read_as_one_line(make_settings: Callable[..., Settings],
                                                fake_openai: FakeOpenAI) -> None:
    settings = openai_settings(make_settings, fake_openai, "llm.request_timeout=1")
    fake_openai.status = 500
    message = await _failure(settings)
    assert message.startswith(f"{fake_openai.url} answered HTTP 500 for served-model: ") and "GPU fell over" in message
    fake_openai.status, fake_openai.error_after = 200, 2
    message = await _failure(settings)
    assert message.startswith(f"served-model at {fake_openai.url} failed: APIError: ") and "GPU fell over" in message
    fake_openai.error_after, fake_openai.drop_after = None, 2
    assert "dropped" in await _failure(settings)
    fake_openai.drop_after, fake_openai.delay = None, 1.5
    assert await _failure(settings) == (f"no answer from served-model at {fake_openai.url} within 1 s "
                                        "(llm.request_timeout); raise it for slow GPUs")


async def test_aclose_closes_the_client_the_model_opened(make_settings: Callable[..., Settings],
                                                         fake_openai: FakeOpenAI) -> None:
    model = await synthesis_model(openai_settings(make_settings, fake_openai))
    assert model.fitted([("user", "x" * 100_000)], 4096) is model      # the server sizes its own context
    await model.aclose()
    with pytest.raises(LLMError):                 # the SDK reports a closed client as a connection error
        await model.complete([("user", "q")])
    assert fake_openai.requests == []


async def test_a_continuation_that_restarts_the_answer_adds_only_its_new_text(
        make_settings: Callable[..., Settings], fake_openai: FakeOpenAI) -> None:
    """Over HTTP, the habit of a real model asked to go on: the answer's opening again, a word changed,
    then the rest. Only the rest is appended."""
    fake_openai.responder = restarts_when_continued
    settings = openai_settings(make_settings, fake_openai, "llm.max_tokens=20")
    session = new_session(settings, "How do pumps start?", StaticRetrieval(["Pumps."]))
    [e async for e in session.run()]
    cut = session.answer
    assert session.turn.stop_reason == "length" and ANSWER.startswith(cut)
    [e async for e in session.continue_answer()]
    await session.aclose()
    assert session.answer == cut.rstrip() + " " + NEW_TEXT and session.turn.stop_reason == "stop"
    assert "should" not in session.answer
