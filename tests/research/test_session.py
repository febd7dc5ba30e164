"""ResearchSession end to end over HTTP to the fake Ollama (the retrieval stage is injected)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.events import (
    AnnotationFailed,
    AnnotationFinished,
    Event,
    Notice,
    SessionSaved,
    SourcesReady,
    StageFailed,
    SynthesisFinished,
    SynthesisStarted,
    SynthesisToken,
)
from ragtui.history import HistoryStore
from ragtui.model.conversation import AnnotationState, Override
from ragtui.model.retrieval import CollectionMeta, KeywordMeta, RetrievalMeta
from ragtui.research.session import ResearchSession
from tests.fake_ollama import FakeOllama, Reply, fenced
from tests.research_helpers import StaticRetrieval, new_session, reopen_session

TEXTS = [
    "Centrifugal pumps start at 3 bar. They need priming first.",
    "The cafeteria menu changes on Mondays.",
    "The log format writes IRRELEVANT!!! for rows the loader skips. Pumps log their pressure.",
    "Pump seals wear out after 5,000 hours.",
]


def annotator(body: dict[str, Any]) -> Reply | None:
    """Quote relevant extracts; call the cafeteria one irrelevant; quote the sentinel-bearing one verbatim."""
    prompt = body["messages"][-1]["content"]
    if "EXTRACT" not in prompt:
        return None
    if "cafeteria" in prompt:
        return Reply.text("[IRRELEVANT!!!]")
    if "loader skips" in prompt:
        return Reply.text('"The log format writes IRRELEVANT!!! for rows the loader skips." Relevant: pump logs.')
    first = fenced(prompt.split("EXTRACT:", 1)[1]).split(".")[0]
    return Reply.text(f'"{first}." This is relevant to the question.')


def responder(answer: Reply | Callable[[], Reply]) -> Callable[[dict[str, Any]], Reply]:
    def respond(body: dict[str, Any]) -> Reply:
        return annotator(body) or (answer() if callable(answer) else answer)
    return respond


async def collect(events: Any) -> list[Event]:
    return [e async for e in events]


async def until_first_annotation(events: AsyncGenerator[Event, None]) -> None:
    """Run a stage until one annotation finishes, then close it there (the user's cancel)."""
    async for event in events:
        if isinstance(event, AnnotationFinished):
            break
    await events.aclose()


def make_session(settings: Settings, texts: list[str] = TEXTS, query: str = "How do pumps start?") -> ResearchSession:
    return new_session(settings, query, StaticRetrieval(texts))


async def test_full_run_partitions_sources_and_streams_a_cited_answer(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply(pieces=["Pumps ", "start ", "at ", "3 ", "bar ", "[1]", " and ",
                                                    "seals ", "wear ", "[4][9]."]))
    session = make_session(make_settings())
    events = await collect(session.run())
    await session.aclose()

    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "RetrievalStarted" and kinds[1] == "SourcesReady"
    assert kinds.index("SynthesisStarted") > max(i for i, k in enumerate(kinds) if k.startswith("Annotation"))
    assert kinds[-2:] == ["SynthesisFinished", "SessionSaved"]
    assert [s.number for s in session.turn.relevant] == [1, 3, 4]
    assert [s.number for s in session.sources if s.filtered] == [2]
    assert session.source(3).state is AnnotationState.RELEVANT      # quoting the sentinel is not a verdict

    tokens = "".join(e.text for e in events if isinstance(e, SynthesisToken))
    assert tokens == session.answer == "Pumps start at 3 bar [1] and seals wear [4][9]."
    started = next(e for e in events if isinstance(e, SynthesisStarted))
    assert started.numbers == (1, 3, 4)
    finished = next(e for e in events if isinstance(e, SynthesisFinished))
    assert finished.stop_reason == "stop" and finished.citations == (1, 4, 9) and finished.unknown_citations == (9,)

    chats = fake_ollama.calls("/api/chat")
    assert len(chats) == 5 and all(c.body["options"]["num_ctx"] == 4096 for c in chats)
    prompt = chats[-1].body["messages"][-1]["content"]
    assert "[2] SOURCE" not in prompt and "cafeteria" not in prompt
    assert "[1] SOURCE: docs/file1.md [p.1]\nANNOTATION: \"Centrifugal pumps start at 3 bar.\"" in prompt
    assert prompt.index("[1] SOURCE") < prompt.index("[4] SOURCE") < prompt.index("[3] SOURCE")
    assert chats[-1].body["options"]["num_predict"] == 1024


async def test_events_keep_the_values_they_were_yielded_with(make_settings: Callable[..., Settings],
                                                             fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("Pumps start at 3 bar [1]."))
    session = make_session(make_settings())
    events = await collect(session.run())
    ready = next(e for e in events if isinstance(e, SourcesReady))
    saved = [e for e in events if isinstance(e, SessionSaved)][-1]
    timings = dict(saved.timings)
    session.rescue(2)
    await collect(session.synthesize())
    await session.aclose()

    assert all(s.state is AnnotationState.PENDING and not s.annotation for s in ready.sources)
    assert ready.sources[1].override is Override.NONE
    assert session.source(2).state is AnnotationState.IRRELEVANT and session.source(2).override is Override.RESCUED
    assert saved.timings == timings and session.turn.timings["synthesize_s"] > timings["synthesize_s"]
    with pytest.raises(TypeError):
        saved.timings["retrieve_s"] = 0.0  # type: ignore[index]


async def test_num_ctx_fits_the_prompt_not_the_whole_window(make_settings: Callable[..., Settings],
                                                             fake_ollama: FakeOllama) -> None:
    fake_ollama.models["chat"].context_length = 131072
    fake_ollama.responder = responder(Reply.text("Answer [1]."))
    session = make_session(make_settings())
    await collect(session.run())
    await session.aclose()
    # small prompts: the 1024 reserved answer tokens + overhead, in 4096-token steps; never 131072
    assert {c.body["options"]["num_ctx"] for c in fake_ollama.calls("/api/chat")} == {4096}

    fake_ollama.requests.clear()
    long_texts = [f"Pumps start at {i} bar. " + "pressure " * 2500 for i in range(4)]   # ~22.5k chars each
    session = make_session(make_settings("annotation.enabled=false"), texts=long_texts)
    await collect(session.run())
    await session.aclose()
    (call,) = fake_ollama.calls("/api/chat")
    prompt_tokens = sum(len(m["content"]) for m in call.body["messages"]) / 3.5
    assert call.body["options"]["num_ctx"] == 28672 > prompt_tokens + 1024 > 24576


async def test_configured_window_caps_num_ctx_and_packing(make_settings: Callable[..., Settings],
                                                          fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("Answer [1]."))
    long_texts = [f"Pumps start at {i} bar. " + "pressure " * 2500 for i in range(4)]
    session = make_session(make_settings("llm.context_window=16384", "llm.annotation_model=annotator"),
                           texts=long_texts)
    events = await collect(session.run())
    await session.aclose()
    by_model = {c.body["model"]: c.body for c in fake_ollama.calls("/api/chat")}
    assert by_model["annotator"]["options"]["num_ctx"] == 4096
    synthesis = by_model["chat"]
    prompt_tokens = math.ceil(sum(len(m["content"]) for m in synthesis["messages"]) / 3.5)
    assert synthesis["options"]["num_ctx"] == math.ceil((prompt_tokens + 1024) / 4096) * 4096 <= 16384
    assert any(isinstance(e, Notice) and "did not fit the context window (16384" in e.message for e in events)


async def test_annotation_off_sends_every_source(make_settings: Callable[..., Settings],
                                                 fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("All four [1][2][3][4]."))
    session = make_session(make_settings("annotation.enabled=false"))
    events = await collect(session.run())
    await session.aclose()
    assert len(fake_ollama.calls("/api/chat")) == 1
    assert all(s.state is AnnotationState.OFF and s.relevant for s in session.sources)
    assert next(e for e in events if isinstance(e, SynthesisStarted)).numbers == (1, 2, 3, 4)
    assert "ANNOTATION" not in fake_ollama.calls("/api/chat")[0].body["messages"][-1]["content"]


async def test_rescue_drop_and_resynthesize(make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("Answer [1]."))
    session = make_session(make_settings())
    await collect(session.run())
    assert session.rescue(2).override is Override.RESCUED
    assert session.drop(1).override is Override.DROPPED
    assert session.rescue(1).override is Override.NONE            # back to the model's own verdict
    assert session.drop(4).override is Override.DROPPED
    assert [s.number for s in session.turn.relevant] == [1, 2, 3]
    assert [s.number for s in session.sources if s.filtered] == [4]
    events = await collect(session.synthesize())
    await session.aclose()
    assert next(e for e in events if isinstance(e, SynthesisStarted)).numbers == (1, 2, 3)
    prompt = fake_ollama.calls("/api/chat")[-1].body["messages"][-1]["content"]
    assert "[2] SOURCE" in prompt and "[4] SOURCE" not in prompt and "IRRELEVANT!!!]" not in prompt
    stored = HistoryStore(session.settings.data_dir).load(session.id)
    assert {s.number: s.override for s in stored.all_sources} == {1: Override.NONE, 2: Override.RESCUED,
                                                              3: Override.NONE, 4: Override.DROPPED}
    with pytest.raises(KeyError):
        session.rescue(99)


async def test_reannotate_one_source_with_another_model_and_prompt(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama, tmp_path: Path) -> None:
    fake_ollama.responder = responder(Reply.text("Answer [1]."))
    session = make_session(make_settings())
    await collect(session.run())
    assert session.source(2).state is AnnotationState.IRRELEVANT
    prompt_file = tmp_path / "p.txt"
    prompt_file.write_text("Be generous. QUERY -- CONTENT")
    fake_ollama.requests.clear()
    fake_ollama.responder = lambda body: Reply.text('"menu changes on Mondays" matters for lunch.')
    events = await collect(session.reannotate([2], model="annotator", prompt_file=str(prompt_file)))
    await session.aclose()
    (call,) = fake_ollama.calls("/api/chat")
    assert call.body["model"] == "annotator"
    assert call.body["messages"][-1]["content"] == f"Be generous. How do pumps start? -- \n<<<\n{TEXTS[1]}\n>>>"
    assert [type(e).__name__ for e in events] == ["AnnotationStarted", "AnnotationFinished", "SessionSaved"]
    assert session.source(2).state is AnnotationState.RELEVANT
    assert session.source(1).annotation.startswith('"Centrifugal')    # untouched
    stored = HistoryStore(session.settings.data_dir).load(session.id).all_sources
    assert (stored[1].annotated_by, stored[1].annotation_prompt) == ("annotator", str(prompt_file))
    # source 1 kept turn 1's annotation: the default annotator and prompt
    assert (stored[0].annotated_by, stored[0].annotation_prompt) == ("chat", "")


async def test_reannotate_all_and_a_rescue_that_now_agrees_is_settled(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("Answer [1]."))
    session = make_session(make_settings())
    await collect(session.run())
    session.rescue(2)
    fake_ollama.responder = lambda body: Reply.text('"quote" relevant after all.')
    events = await collect(session.reannotate())
    await session.aclose()
    assert sum(isinstance(e, AnnotationFinished) for e in events) == 4
    assert all(s.state is AnnotationState.RELEVANT and s.override is Override.NONE for s in session.sources)


async def test_bad_prompt_file_on_reannotate_is_a_stage_failure(make_settings: Callable[..., Settings],
                                                                fake_ollama: FakeOllama, tmp_path: Path) -> None:
    fake_ollama.responder = responder(Reply.text("Answer [1]."))
    session = make_session(make_settings())
    await collect(session.run())
    bad = tmp_path / "bad.txt"
    bad.write_text("no tokens at all")
    events = await collect(session.reannotate([1], prompt_file=str(bad)))
    await session.aclose()
    failure = next(e for e in events if isinstance(e, StageFailed))
    assert "bad.txt" in failure.message and "annotation.prompt_file" in failure.message
    assert session.source(1).state is AnnotationState.RELEVANT and session.source(1).annotation


async def test_failed_annotation_is_isolated_and_reported(make_settings: Callable[..., Settings],
                                                          fake_ollama: FakeOllama) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        if "seals" in body["messages"][-1]["content"]:
            return Reply(status=500, error="out of memory")
        return annotator(body) or Reply.text("Answer [1].")

    fake_ollama.responder = respond
    session = make_session(make_settings())
    events = await collect(session.run())
    await session.aclose()
    failure = next(e for e in events if isinstance(e, AnnotationFailed))
    assert failure.number == 4 and "out of memory" in failure.error
    assert session.source(4).state is AnnotationState.FAILED and session.source(4).filtered
    assert [s.number for s in session.turn.relevant] == [1, 3]
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert any("[4]" in n and "rescue" in n for n in notices)


async def test_continue_after_length_joins_without_repeats(make_settings: Callable[..., Settings],
                                                           fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("unused"))
    fake_ollama.script(Reply.text("Pumps start at 3 bar [1] and the", done_reason="length"))
    session = make_session(make_settings("annotation.enabled=false"))
    await collect(session.run())
    assert session.turn.truncated and session.turn.stop_reason == "length"
    assert session.answer == "Pumps start at 3 bar [1] and the"

    fake_ollama.script(Reply.text("and the seals wear out after 5,000 hours [4].", done_reason="length"))
    events = await collect(session.continue_answer())
    tokens = "".join(e.text for e in events if isinstance(e, SynthesisToken))
    assert tokens == " seals wear out after 5,000 hours [4]."
    assert session.answer == "Pumps start at 3 bar [1] and the seals wear out after 5,000 hours [4]."
    assert session.turn.truncated and session.turn.continuations == 1

    fake_ollama.script(Reply.text("Priming comes first [1]."))
    events = await collect(session.continue_answer())
    await session.aclose()
    assert session.answer == ("Pumps start at 3 bar [1] and the seals wear out after 5,000 hours [4]. "
                              "Priming comes first [1].")
    finished = next(e for e in events if isinstance(e, SynthesisFinished))
    assert finished.stop_reason == "stop" and finished.text == session.answer and finished.citations == (1, 4)
    assert next(e for e in events if isinstance(e, SynthesisStarted)).continuation

    last = fake_ollama.calls("/api/chat")[-1].body["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user"]
    assert last[2]["content"] == "Pumps start at 3 bar [1] and the seals wear out after 5,000 hours [4]."
    stored = HistoryStore(session.settings.data_dir).load(session.id)
    assert stored.turn.answer == session.answer and stored.turn.continuations == 2 and stored.turn.stop_reason == "stop"


async def test_continue_when_the_model_cuts_at_num_predict(make_settings: Callable[..., Settings],
                                                           fake_ollama: FakeOllama) -> None:
    words = "Pumps start at 3 bar after priming [1] and their seals last 5,000 hours [4] in service."
    fake_ollama.responder = lambda body: Reply.text(words)     # a weak model: restarts from the top
    session = make_session(make_settings("annotation.enabled=false", "llm.max_tokens=6"))
    await collect(session.run())
    assert session.turn.truncated and session.answer == "Pumps start at 3 bar after "
    events = await collect(session.continue_answer())
    assert session.answer == "Pumps start at 3 bar after "       # a full repeat adds nothing
    assert any(isinstance(e, Notice) and "repeated its answer" in e.message for e in events)
    await session.aclose()


async def test_nothing_to_continue(make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("Done [1]."))
    session = make_session(make_settings("annotation.enabled=false"))
    await collect(session.run())
    events = await collect(session.continue_answer())
    await session.aclose()
    assert [type(e) for e in events] == [Notice] and session.turn.continuations == 0


async def test_cancel_mid_stream_keeps_a_consistent_record(make_settings: Callable[..., Settings],
                                                           fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply(pieces=[f"w{i} " for i in range(200)], delay=0.02))
    session = make_session(make_settings())
    seen: list[str] = []
    three = asyncio.Event()

    async def consume() -> None:
        async for event in session.run():
            if isinstance(event, SynthesisToken):
                seen.append(event.text)
                if len(seen) == 3:
                    three.set()

    task = asyncio.create_task(consume())
    await three.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await session.aclose()
    stored = HistoryStore(session.settings.data_dir).load(session.id)
    assert stored.turn.stop_reason == "cancelled"
    assert stored.turn.answer == session.answer == "".join(seen) and stored.turn.answer.startswith("w0 w1 w2 ")
    assert [s.state for s in stored.all_sources] == [s.state for s in session.sources]
    assert stored.turn.prompt_numbers == (1, 3, 4)
    partial = session.answer
    fake_ollama.responder = lambda body: Reply.text(partial.split()[-1] + " and the rest [1].")
    assert session.turn.can_continue and not session.turn.truncated
    await collect(session.continue_answer())
    await session.aclose()
    assert session.answer == partial + "and the rest [1]." and session.turn.stop_reason == "stop"


async def test_closing_the_iterator_during_annotation_leaves_the_rest_not_annotated(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    """Sources a cancel cut are "not annotated": relevant, never filtered; the session says it was cancelled."""
    def respond(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        return Reply.text("quick quote") if "Centrifugal" in prompt else Reply(pieces=["slow"], delay=0.5)

    fake_ollama.responder = respond
    session = make_session(make_settings("annotation.concurrency=4"))
    events = session.run()
    await until_first_annotation(events)
    await session.aclose()
    stored = HistoryStore(session.settings.data_dir).load(session.id)
    for sources in (stored.all_sources, session.sources):
        assert sources[0].state is AnnotationState.RELEVANT
        assert [s.state for s in sources[1:]] == [AnnotationState.PENDING] * 3
        assert all(s.relevant and not s.filtered and not s.error for s in sources)
    assert stored.turn.answer == "" and stored.turn.stop_reason == "cancelled"


async def test_cancelled_reannotation_keeps_every_earlier_annotation(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("Pumps start at 3 bar [1]."))
    session = make_session(make_settings("annotation.concurrency=2"))
    await collect(session.run())
    before = session.sources
    assert [s.number for s in before if s.filtered] == [2]

    def slow(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        if "Centrifugal" in prompt:
            return Reply.text('"Centrifugal pumps start at 3 bar." A new reading.')
        return Reply(pieces=["[IRRELEVANT!!!]"], delay=2.0)

    fake_ollama.responder = slow
    events = session.reannotate()
    await until_first_annotation(events)
    await session.aclose()
    stored = HistoryStore(session.settings.data_dir).load(session.id)
    for sources in (stored.all_sources, session.sources):
        assert "A new reading" in sources[0].annotation            # the one that finished is new
        assert list(sources[1:]) == list(before[1:])                # the cut ones are as they were
        assert [s.number for s in sources if s.filtered] == [2]
    assert stored.turn.answer == "Pumps start at 3 bar [1]." and stored.turn.stop_reason == "stop"


async def test_synthesis_failure_is_a_stage_failure_with_partial_text(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply(pieces=["Pumps ", "start ", "at"], drop_after=2))
    session = make_session(make_settings())
    events = await collect(session.run())
    await session.aclose()
    failure = next(e for e in events if isinstance(e, StageFailed))
    assert failure.stage == "synthesize" and "dropped" in failure.message
    finished = next(e for e in events if isinstance(e, SynthesisFinished))
    assert finished.stop_reason == "error" and finished.text == "Pumps start "
    assert HistoryStore(session.settings.data_dir).load(session.id).turn.error == failure.message


@pytest.mark.parametrize("pieces", [[""], ["  ", "\n"]])
async def test_an_empty_answer_with_done_is_a_stage_failure(make_settings: Callable[..., Settings],
                                                             fake_ollama: FakeOllama, pieces: list[str]) -> None:
    fake_ollama.responder = responder(Reply(pieces=pieces))
    session = make_session(make_settings())
    events = await collect(session.run())
    await session.aclose()
    failure = next(e for e in events if isinstance(e, StageFailed))
    assert failure.stage == "synthesize" and "finished without writing an answer" in failure.message
    assert "'stop'" in failure.message and "llm.model" in failure.message
    assert next(e for e in events if isinstance(e, SynthesisFinished)).stop_reason == "error"
    assert HistoryStore(session.settings.data_dir).load(session.id).turn.error == failure.message


async def test_missing_model_keeps_the_sources_and_gives_the_pull_hint(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    retrieval = StaticRetrieval(TEXTS)
    session = new_session(make_settings("llm.model=llama9:70b"), "q", retrieval)
    events = await collect(session.run())
    assert [type(e).__name__ for e in events] == ["RetrievalStarted", "SourcesReady", "StageFailed"]
    assert "ollama pull llama9:70b" in events[-1].message and fake_ollama.url in events[-1].message
    assert retrieval.calls == [("q", ("docs",))] and fake_ollama.calls("/api/chat") == []
    assert all(s.state is AnnotationState.OFF for s in session.sources)


async def test_unreachable_ollama_still_retrieves_and_saves_a_reopenable_session(
        make_settings: Callable[..., Settings]) -> None:
    settings = make_settings("ollama.host=http://127.0.0.1:9")
    session = make_session(settings)
    events = await collect(session.run())
    failure = events[-1]
    assert isinstance(failure, StageFailed) and failure.stage == "synthesize"
    assert "http://127.0.0.1:9" in failure.message and "not reachable" in failure.message
    assert "no annotation and no answer" in failure.message
    record = HistoryStore(settings.data_dir).load(session.id)
    assert len(record.all_sources) == len(TEXTS) and record.turn.answer == "" and record.turn.error == failure.message
    reopened = reopen_session(settings, session.id)
    assert [s.chunk.id for s in reopened.sources] == [s.chunk.id for s in session.sources]


async def test_no_hits_is_said_plainly(make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    session = make_session(make_settings(), texts=[])
    events = await collect(session.run())
    await session.aclose()
    assert [type(e).__name__ for e in events] == ["RetrievalStarted", "SourcesReady", "Notice", "SessionSaved"]
    assert "no sources" in next(e for e in events if isinstance(e, Notice)).message
    assert fake_ollama.calls("/api/chat") == []


async def test_retrieval_notices_and_meta_are_kept(make_settings: Callable[..., Settings],
                                                   fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("Answer [1]."))
    meta = RetrievalMeta(collections={"docs": CollectionMeta(keyword=KeywordMeta(tier=2))})
    retrieval = StaticRetrieval(TEXTS[:1], meta=meta, notices=["embedder unreachable"])
    session = new_session(make_settings(), "q", retrieval)
    events = await collect(session.run())
    await session.aclose()
    assert Notice("warning", "embedder unreachable") in events
    assert HistoryStore(session.settings.data_dir).load(session.id).turn.retrieval_meta == meta


async def test_reopened_session_reannotates_and_continues(make_settings: Callable[..., Settings],
                                                          fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("unused"))
    fake_ollama.script(*[Reply.text('"q" relevant.')] * 4, Reply.text("Pumps start [1] at", done_reason="length"))
    settings = make_settings("annotation.concurrency=1")
    first = make_session(settings)
    await collect(first.run())
    await first.aclose()

    again = reopen_session(settings, first.id)
    assert again.turn.query == first.turn.query and again.turn.truncated and again.answer == "Pumps start [1] at"
    assert [s.chunk.label for s in again.sources] == [s.chunk.label for s in first.sources]
    fake_ollama.script(Reply.text("3 bar [1]."))
    await collect(again.continue_answer())
    assert again.answer == "Pumps start [1] at 3 bar [1]." and again.turn.stop_reason == "stop"
    fake_ollama.script(Reply.text("[IRRELEVANT!!!]"))
    await collect(again.reannotate([1]))
    await again.aclose()
    assert again.source(1).state is AnnotationState.IRRELEVANT
    stored = HistoryStore(settings.data_dir).load(first.id)
    assert stored.all_sources[0].state is AnnotationState.IRRELEVANT and stored.turn.answer == again.answer
    assert len(HistoryStore(settings.data_dir).list_sessions()) == 1


async def test_session_saved_carries_timings(make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("Answer [1]."))
    session = make_session(make_settings())
    events = await collect(session.run())
    await session.aclose()
    saved = events[-1]
    assert isinstance(saved, SessionSaved) and saved.session_id == session.id
    assert {"retrieve_s", "annotate_s", "synthesize_s"} <= set(saved.timings)


async def test_oversized_sources_are_sent_as_their_most_relevant_part(make_settings: Callable[..., Settings],
                                                                     fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("Answer [1]."))
    big = ["Filler words here. " * 1100 + "Pumps start at 3 bar. " + "q" * 3000, "Seals wear. " + "s" * 30000]
    session = make_session(make_settings("annotation.enabled=false"), texts=big)
    events = await collect(session.run())
    await session.aclose()
    notice = next(e for e in events if isinstance(e, Notice) and "most relevant part" in e.message)
    assert "[1]" in notice.message and "[2]" in notice.message
    started = next(e for e in events if isinstance(e, SynthesisStarted))
    assert started.numbers == (1, 2) and started.windowed == (1, 2) and started.left_out == ()
    prompt = fake_ollama.calls("/api/chat")[-1].body["messages"][-1]["content"]
    assert "Pumps start at 3 bar." in prompt and "Filler words here. " * 70 not in prompt
    assert session.source(1).chunk.text == big[0]                # the source itself stays whole
    assert session.use_in_answer(1) == "window"


async def test_history_snapshot_masks_the_api_key(make_settings: Callable[..., Settings],
                                                  fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(Reply.text("Answer [1]."))
    session = make_session(make_settings("llm.api_key=sk-secret", "retrieve.top_k=7"))
    await collect(session.run())
    await session.aclose()
    config = HistoryStore(session.settings.data_dir).load(session.id).config
    assert config["llm.api_key"] == "***" and config["retrieve.top_k"] == 7 and config["llm.model"] == "chat"


def test_preload_imports_what_a_first_session_needs() -> None:
    import subprocess
    import sys

    heavy = ("ragtui.retrieve.pipeline", "ragtui.retrieve.hybrid_retriever", "ragtui.retrieve.postprocess",
             "ragtui.ingest.pipeline", "llama_index.llms.ollama", "llama_index.embeddings.ollama",
             "chromadb", "whoosh.index", "wn")
    code = ("import sys; from ragtui.research.session import preload; preload(); "
            f"print(all(m in sys.modules for m in {heavy!r}))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "True"
