"""LLM calls the server cut, asked again (llm.retries, llm.backoff_s) through the fake OpenAI-compatible server over
HTTP: annotations (alone first, then with backoff; the concurrency lowered when cuts repeat), answers (only
before any text was shown) and rewrites; every retry and every failure one line, nothing tried forever."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.events import AnnotationFailed, AnnotationFinished, Event, Notice, StageFailed, SynthesisFinished
from ragtui.model.conversation import AnnotationState, StopReason
from tests.fake_ollama import default_responder
from tests.fake_openai import FakeOpenAI
from tests.research_helpers import StaticRetrieval, new_session

TEXTS = [f"Centrifugal pumps start at {n} bar once primed, the manual for model {n} says." for n in range(1, 7)]
CUT = "the answer from served-model at {url} ended without its final frame (connection dropped?)"
ANSWER = "Centrifugal pumps start once primed [1]. The pressure differs by model [2]."


def replies(body: dict[str, Any]) -> str:
    """Annotations quote their extract; a rewrite request gets a rewrite; anything else ANSWER."""
    last = str(body["messages"][-1]["content"])
    if last.endswith("Standalone question:"):
        return "At what pressure does model 2 start?"
    return "".join(default_responder(body).pieces) if "EXTRACT" in last else ANSWER


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.responder = replies
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def settings(make_settings: Callable[..., Settings], server: FakeOpenAI) -> Callable[..., Settings]:
    def build(*extra: str) -> Settings:
        return make_settings("llm.provider=openai", f"llm.base_url={server.url}", "llm.model=served-model",
                             "llm.backoff_s=0.01", *extra)
    return build


async def drain(events: Any) -> list[Event]:
    return [e async for e in events]


def notices(events: list[Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, Notice)]


def annotation_calls(server: FakeOpenAI) -> list[int]:
    """For each annotation request in order, how many other requests were open when it arrived."""
    return [open_ for body, open_ in zip(server.requests, server.open_at_arrival, strict=True)
            if "EXTRACT" in str(body["messages"][-1]["content"])]


async def test_cut_annotations_are_asked_again_alone_and_the_concurrency_drops_once(
        settings: Callable[..., Settings], server: FakeOpenAI) -> None:
    server.interrupting, server.piece_s = True, 0.02
    session = new_session(settings(), "How do pumps start?", StaticRetrieval(TEXTS))
    events = await drain(session.run())
    assert [s.state for s in session.sources] == [AnnotationState.RELEVANT] * len(TEXTS)   # none lost
    assert server.interrupted >= 2
    lowered = [n for n in notices(events) if "annotation.concurrency" in n]
    assert lowered == ["annotation streams from served-model were cut while others were in flight; annotating one "
                       "source at a time for the rest of this session (annotation.concurrency 4 -> 1; set it to 1 "
                       "for a server that answers one request at a time)"]
    retried = [n for n in notices(events) if "asking again alone" in n]
    assert len(retried) == server.interrupted
    calls = annotation_calls(server)
    assert len(calls) == len(TEXTS) + server.interrupted
    assert calls[-(len(TEXTS) - 4 + server.interrupted):] == [0] * (len(TEXTS) - 4 + server.interrupted)  # 1 at a time
    assert any(isinstance(e, SynthesisFinished) for e in events)

    # the rest of the session keeps one at a time, and says nothing more
    before = len(server.requests)
    again = await drain(session.reannotate())
    await session.aclose()
    assert annotation_calls(server)[-len(TEXTS):] == [0] * len(TEXTS) and len(server.requests) == before + len(TEXTS)
    assert not [n for n in notices(again) if "annotation.concurrency" in n]
    assert server.interrupted == len(retried)


async def test_an_annotation_cut_every_time_fails_after_llm_retries_attempts(
        settings: Callable[..., Settings], server: FakeOpenAI) -> None:
    server.drop_after = 0                                     # every stream is cut before its first piece
    session = new_session(settings("llm.retries=2", "annotation.concurrency=1"), "How do pumps start?",
                          StaticRetrieval(TEXTS[:3]))
    events = await drain(session.run())
    await session.aclose()
    failed = [e for e in events if isinstance(e, AnnotationFailed)]
    assert [e.number for e in failed] == [1, 2, 3] and len(server.requests) == 3 * 2      # bounded: 2 tries each
    assert [e.source.error for e in failed] == [f"{CUT.format(url=server.url)} (after 2 attempts, llm.retries)"] * 3
    assert [n for n in notices(events) if "asking again" in n] == [
        f"the annotation of [{n}] failed ({CUT.format(url=server.url)}); asking again alone (attempt 2 of 2, "
        "llm.retries)" for n in (1, 2, 3)]
    (stage,) = [e for e in events if isinstance(e, StageFailed)]
    assert stage.message.startswith("no relevant sources to answer from (3 annotation(s) failed)")


async def test_an_answer_cut_before_any_text_is_asked_again(settings: Callable[..., Settings],
                                                            server: FakeOpenAI) -> None:
    session = new_session(settings("annotation.enabled=false"), "How do pumps start?", StaticRetrieval(TEXTS[:2]))
    server.cut_next = [0]                                      # the first answer is cut before its first piece
    events = await drain(session.run())
    await session.aclose()
    assert session.answer == ANSWER and session.turn.stop_reason is StopReason.STOP
    assert len(server.requests) == 2
    assert notices(events) == [f"the answer from served-model failed ({CUT.format(url=server.url)}); asking again "
                               "in 0.01 s (attempt 2 of 3, llm.retries)"]


async def test_an_answer_cut_after_its_first_words_keeps_them_and_is_not_asked_again(
        settings: Callable[..., Settings], server: FakeOpenAI) -> None:
    session = new_session(settings("annotation.enabled=false"), "How do pumps start?", StaticRetrieval(TEXTS[:2]))
    server.cut_next = [3]
    events = await drain(session.run())
    await session.aclose()
    assert session.answer == "Centrifugal pumps start " and session.turn.stop_reason is StopReason.ERROR
    assert len(server.requests) == 1                           # never written twice
    (failed,) = [e for e in events if isinstance(e, StageFailed)]
    assert failed.message == (f"{CUT.format(url=server.url)}; the text so far is kept, not asked for again (it would "
                              "be written twice): synthesize again for a whole answer")


async def test_a_cut_rewrite_is_asked_again(settings: Callable[..., Settings], server: FakeOpenAI) -> None:
    session = new_session(settings("annotation.enabled=false"), "How do pumps start?", StaticRetrieval(TEXTS[:2]))
    await drain(session.run())
    server.cut_next = [2]                                      # the rewrite, cut after two pieces
    events = await drain(session.follow_up("And model 2?"))
    await session.aclose()
    assert session.turn.rewrite == "At what pressure does model 2 start?"
    assert [n for n in notices(events) if "rewrite" in n] == [
        f"the rewrite of the follow-up by served-model failed ({CUT.format(url=server.url)}); asking again in 0.01 s "
        "(attempt 2 of 3, llm.retries)"]
    assert isinstance(events[-2], SynthesisFinished) and session.answer == ANSWER


async def test_annotations_that_finish_are_not_asked_again(settings: Callable[..., Settings],
                                                           server: FakeOpenAI) -> None:
    session = new_session(settings(), "How do pumps start?", StaticRetrieval(TEXTS))
    events = await drain(session.run())
    await session.aclose()
    assert len([e for e in events if isinstance(e, AnnotationFinished)]) == len(TEXTS)
    assert len(annotation_calls(server)) == len(TEXTS) and not notices(events)
