"""Conversations: follow-up turns through the real stack (ingest, hybrid retrieval, history) and the fake Ollama."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.events import Event, Notice, RewriteReady, SourcesReady, SynthesisFinished
from ragtui.llm.packing import fit_conversation
from ragtui.llm.rewrite import clean_rewrite
from ragtui.llm.synthesize import build_messages
from ragtui.model.chunks import Chunk, ChunkMeta
from ragtui.model.retrieval import Hit
from ragtui.retrieve.runs import fuse_runs
from ragtui.workspace import Workspace
from tests.fake_ollama import FakeOllama, Reply

DOCS = [
    ("pumps.md", "Centrifugal pumps must be primed before they start. A primed pump starts at 3 bar of pressure."),
    ("seals.md", "Mechanical seals of a centrifugal pump wear out after about 5,000 hours and then leak."),
    ("valves.md", "A check valve closes when the flow reverses, which protects the centrifugal pump."),
    ("lunch.md", "The cafeteria serves soup on Mondays and fish on Fridays."),
]
QUESTIONS = ["At what pressure does a centrifugal pump start?", "How long do its seals last?",
             "And what protects it when the flow reverses?"]
REWRITES = {QUESTIONS[1]: "How long do the mechanical seals of a centrifugal pump last?",
            QUESTIONS[2]: "What protects a centrifugal pump when the flow reverses?"}
ANSWERS = {QUESTIONS[0]: "It starts at 3 bar once primed [1].",
           QUESTIONS[1]: "About 5,000 hours [{n}].",
           QUESTIONS[2]: "A check valve [{n}]."}


def respond(body: dict[str, Any]) -> Reply:
    """Annotations: the cafeteria is irrelevant. Rewrites: from REWRITES. Answers: cite the first source given."""
    last = body["messages"][-1]["content"]
    if "EXTRACT" in last:
        return Reply.text("[IRRELEVANT!!!]") if "cafeteria" in last else Reply.text('"quote" relevant.')
    if last.endswith("Standalone question:"):
        question = last.removeprefix("Last question: ").split("\n", 1)[0]
        return Reply.text(f"Standalone question: {REWRITES[question]}")
    question = last.split("QUESTION: ", 1)[1].split("\n", 1)[0]
    first = int(last.split("SOURCES:\n\n[", 1)[1].split("]", 1)[0])
    return Reply.text(ANSWERS[question].format(n=first))


async def drain(events: Any) -> list[Event]:
    return [e async for e in events]


@pytest.fixture
async def workspace(make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> Any:
    settings = make_settings("retrieve.max_chunks_per_file=1")
    ws = Workspace(settings)
    async for _ in ws.ingest_documents("docs", DOCS):
        pass
    fake_ollama.responder = respond
    yield ws
    ws.close()


async def test_a_three_turn_conversation(workspace: Workspace, fake_ollama: FakeOllama) -> None:
    session = workspace.new_session(QUESTIONS[0], ["docs"])
    await drain(session.run())
    turn1 = len(session.sources)
    second = await drain(session.follow_up(QUESTIONS[1]))
    fake_ollama.requests.clear()
    third = await drain(session.follow_up(QUESTIONS[2]))
    await session.aclose()

    # the follow-up was rewritten by the LLM from the conversation, and retrieved on it as well as on the typed words
    (rewrite,) = [e for e in second if isinstance(e, RewriteReady)]
    assert (rewrite.rewrite, rewrite.by) == (REWRITES[QUESTIONS[1]], "chat")
    turn2 = session.turns[1]
    assert turn2.rewrite_meta is not None and turn2.retrieval_meta is not None
    assert "mechanical" in turn2.rewrite_meta.collections["docs"].keyword.words
    assert "mechanical" not in turn2.retrieval_meta.collections["docs"].keyword.words
    assert any(e.leg == "rewrite" for s in turn2.sources for e in s.evidence)
    ready = next(e for e in second if isinstance(e, SourcesReady))
    assert ready.turn == 2 and ready.sources[0].number == turn1 + 1     # numbers continue across turns

    # turn 3's rewrite and answer carry turns 1-2 as whole messages
    rewrite_call, *_, answer_call = [c for c in fake_ollama.calls("/api/chat")
                                     if "EXTRACT" not in c.body["messages"][-1]["content"]]
    assert "Standalone question:" in rewrite_call.body["messages"][-1]["content"]
    convo = [(m["role"], m["content"]) for m in answer_call.body["messages"][1:-1]]
    assert convo == [("user", QUESTIONS[0]), ("assistant", session.turns[0].answer),
                     ("user", QUESTIONS[1]), ("assistant", session.turns[1].answer)]
    assert "follow-up in a conversation" in answer_call.body["messages"][0]["content"]
    assert session.turn.context_turns == (1, 2)
    finished = next(e for e in third if isinstance(e, SynthesisFinished))
    assert finished.citations and finished.unknown_citations == ()
    assert all(n > turn1 + len(turn2.sources) for n in finished.citations)
    assert "check valve" in session.source(finished.citations[0]).chunk.text

    # reopen restores the whole conversation; export writes every turn with its numbered sources
    again = workspace.reopen(session.id or 0)
    assert [t.query for t in again.turns] == QUESTIONS
    assert [t.answer for t in again.turns] == [t.answer for t in session.turns]
    assert [[s.number for s in t.sources] for t in again.turns] == [[s.number for s in t.sources]
                                                                     for t in session.turns]
    assert again.turns[1].rewrite == REWRITES[QUESTIONS[1]] and again.source(turn1 + 1).evidence
    text = workspace.export_session(session.id or 0).read_text()
    for i, question in enumerate(QUESTIONS, start=1):
        assert f"## Turn {i}: {question}" in text
    assert f"- Retrieved as typed and as: {REWRITES[QUESTIONS[2]]} (rewrite by chat)" in text
    for s in again.conversation.all_sources:
        assert f"\n{s.number}. **{s.chunk.label}**" in text
    assert text.index("## Turn 2") < text.index(f"\n{turn1 + 1}. **") < text.index("## Turn 3")


async def test_rewrite_given_by_the_user_and_skipped_when_the_llm_fails(workspace: Workspace,
                                                                       fake_ollama: FakeOllama) -> None:
    session = workspace.new_session(QUESTIONS[0], ["docs"])
    await drain(session.run())
    events = await drain(session.follow_up(QUESTIONS[1], rewrite="  seals\x1b[31m lifetime  "))
    assert session.turn.rewrite == "seals lifetime" and session.turn.rewrite_by == "user"
    assert not any("Standalone question:" in c.body["messages"][-1]["content"]
                   for c in fake_ollama.calls("/api/chat"))
    assert any(isinstance(e, RewriteReady) and e.by == "user" for e in events)
    revised = await drain(session.revise_rewrite("valve flow"))
    assert len(session.turns) == 2 and session.turn.rewrite == "valve flow" and session.turn.query == QUESTIONS[1]
    assert any(isinstance(e, SourcesReady) for e in revised)

    fake_ollama.script(Reply(status=500, error="out of memory"))       # the rewrite call fails
    events = await drain(session.follow_up(QUESTIONS[2]))
    await session.aclose()
    assert session.turn.rewrite == "" and session.turn.rewrite_meta is None
    assert any(isinstance(e, Notice) and "not rewritten" in e.message and "out of memory" in e.message
               for e in events)
    assert session.turn.sources and session.answer            # typed words alone still answered


def _hit(cid: str, score: float) -> Hit:
    meta = ChunkMeta(collection="c", source=f"{cid}.md", file_hash="h", format="md", chunk_index=0,
                     char_start=0, char_end=1)
    return Hit(chunk=Chunk(cid, cid, meta), score=score, rel_score=score, legs=("keyword",))


def test_a_poor_rewrite_cannot_push_out_what_the_typed_words_find() -> None:
    typed = [_hit("a", 0.9), _hit("b", 0.8)]
    rewrite = [_hit("x", 0.9), _hit("y", 0.8), _hit("z", 0.7), _hit("b", 0.6)]
    fused = fuse_runs([("query", typed), ("rewrite", rewrite)], k=20, most=16)
    ids = [h.chunk.id for h in fused]
    assert set(ids) == {"a", "b", "x", "y", "z"}               # the union, under retrieve.annotate_max
    assert ids[0] == "b"                                       # found by both runs
    b = fused[0]
    assert b.score == pytest.approx(1 / 22 + 1 / 24) and b.rel_score == 1.0
    assert [(e.leg, e.rank) for e in b.evidence if e.leg in ("query", "rewrite")] == [("query", 2), ("rewrite", 4)]
    assert ids.index("a") < ids.index("y")                     # typed rank 1 ties rewrite rank 1, ahead of rank 2


def test_conversation_fits_whole_pairs_newest_first() -> None:
    turns = [("q1", "a" * 700), ("q2", "b" * 70), ("q3", "c" * 35)]
    kept, used = fit_conversation(turns, budget=70)
    assert kept == [1, 2] and used == (1 + 20 + 16) + (1 + 10 + 16)
    assert fit_conversation(turns, budget=60) == ([2], 27)
    assert fit_conversation(turns, budget=10) == ([], 0)
    messages = build_messages("q4", [], conversation=[turns[2]], earlier=["q1", "q2"])
    assert [role for role, _ in messages] == ["system", "user", "assistant", "user"]
    assert messages[2][1] == "c" * 35                                            # never cut mid-message
    assert messages[-1][1].startswith("EARLIER QUESTIONS (answers left out for space): q1 | q2")


def test_clean_rewrite_keeps_one_safe_line() -> None:
    assert clean_rewrite('Rewritten question: "How long do pump seals last?"\nBecause...') == \
        "How long do pump seals last?"
    assert clean_rewrite("\n\n  \x1b]0;title\x07What\u200b now?  ") == "What now?"
    assert clean_rewrite("") == "" and len(clean_rewrite("w " * 1000)) == 400


async def test_a_rewrite_that_found_nothing_does_not_say_so_beside_the_typed_words_sources(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    async with Workspace(make_settings("retrieve.max_chunks_per_file=1", "retrieve.min_token_overlap=0.5")) as ws:
        async for _ in ws.ingest_documents("docs", DOCS):
            pass
        fake_ollama.responder = lambda body: (Reply.text("They wear out [2].") if "QUESTION: mechanical seals"
                                              in body["messages"][-1]["content"] else respond(body))
        session = ws.new_session(QUESTIONS[0], ["docs"])
        await drain(session.run())
        events = await drain(session.follow_up("mechanical seals", rewrite="zebra okapi"))
        await session.aclose()
    assert [s.chunk.meta.source for s in session.turn.sources] == ["seals.md"]
    said = [e.message for e in events if isinstance(e, Notice)]
    assert not any("Nothing relevant" in n or "Nothing found" in n for n in said), said


async def test_the_strategies_search_the_standalone_rewrite_not_the_typed_follow_up(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    def with_queries(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        if last.endswith("Queries:"):
            return Reply.text("centrifugal pump seal wear\nseal lifetime of a centrifugal pump")
        return respond(body)

    async with Workspace(make_settings("retrieve.max_chunks_per_file=1", "strategies.multi_query=2")) as ws:
        async for _ in ws.ingest_documents("docs", DOCS):
            pass
        fake_ollama.responder = with_queries
        session = ws.new_session(QUESTIONS[0], ["docs"])
        await drain(session.run())
        fake_ollama.requests.clear()
        await drain(session.follow_up(QUESTIONS[1]))
        await session.aclose()
    asked = [c.body["messages"][-1]["content"] for c in fake_ollama.calls("/api/chat")
             if c.body["messages"][-1]["content"].endswith("Queries:")]
    assert asked == [f"Question: {REWRITES[QUESTIONS[1]]}\n\nQueries:"]     # not also for "its seals"
    turn = session.turn
    assert turn.rewrite_meta is not None and turn.rewrite_meta.strategies is not None
    assert turn.retrieval_meta is not None and turn.retrieval_meta.strategies is None
