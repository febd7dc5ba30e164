"""A follow-up's rewrite is checked before it is used, a turn annotates at most retrieve.annotate_max sources, and
sources are annotated against what the user asked: through the real stack (ingest, hybrid retrieval) and the fake
Ollama over HTTP, whose recorded requests show what each prompt received."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.events import Notice, RewriteReady, SynthesisFinished
from ragtui.llm.rewrite import unusable
from ragtui.model.conversation import AnnotationState
from ragtui.model.filters import SearchFilter
from ragtui.model.retrieval import Hit, Retrieval, RetrievalMeta
from ragtui.retrieve.runs import fuse_runs
from ragtui.workspace import Workspace
from tests.cli_run import cli
from tests.fake_ollama import FakeOllama, Reply
from tests.research.test_follow_up import DOCS, QUESTIONS, REWRITES, _hit, drain
from tests.research_helpers import make_chunk, new_session
from tests.test_interrupting_server import write_pump_notes

JUNK = {
    "refusal": ("The sources do not answer this question.", "it reads as a refusal, not a question"),
    "statement": ("Mechanical seals wear out after about 5,000 hours.", "it is a statement, not a question"),
    "elsewhere": ("What is the capital of France?", "it shares no word with the conversation"),
}


def responder(rewrite: str) -> Callable[[dict[str, Any]], Reply]:
    """Annotations quote; the rewrite request gets `rewrite`; answers cite the first source given."""
    def respond(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        if "EXTRACT" in last:
            return Reply.text('"quote" relevant.')
        if last.endswith("Standalone question:"):
            return Reply.text(rewrite)
        return Reply.text("Answered [" + last.split("SOURCES:\n\n[", 1)[1].split("]", 1)[0] + "].")
    return respond


def queries(fake: FakeOllama) -> list[str]:
    """The QUERY each annotation prompt received (between the default prompt's triple quotes)."""
    prompts = [c.body["messages"][-1]["content"] for c in fake.calls("/api/chat")]
    return [p.split("relevant to '''", 1)[1].split("'''", 1)[0] for p in prompts if "EXTRACT" in p]


@pytest.fixture
async def workspace(make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> Any:
    ws = Workspace(make_settings("retrieve.max_chunks_per_file=1"))
    async for _ in ws.ingest_documents("docs", DOCS):
        pass
    yield ws
    ws.close()


@pytest.mark.parametrize("kind", sorted(JUNK))
async def test_a_junk_rewrite_is_not_used(workspace: Workspace, fake_ollama: FakeOllama, kind: str) -> None:
    rewrite, why = JUNK[kind]
    fake_ollama.responder = responder(rewrite)
    session = workspace.new_session(QUESTIONS[0], ["docs"])
    await drain(session.run())
    fake_ollama.requests.clear()
    events = await drain(session.follow_up(QUESTIONS[1]))
    await session.aclose()
    assert [e.message for e in events if isinstance(e, Notice) and "rewrite" in e.message] == [
        f"chat's rewrite of the follow-up was not used ({why}): {rewrite!r}; retrieving and annotating on the "
        "question as typed"]
    assert not any(isinstance(e, RewriteReady) for e in events)
    turn = session.turn
    assert turn.rewrite == "" and turn.rewrite_by == "" and turn.rewrite_meta is None
    assert turn.sources and all(s.state is AnnotationState.RELEVANT for s in turn.sources)
    assert queries(fake_ollama) and all(rewrite not in q and q.startswith(QUESTIONS[1]) for q in queries(fake_ollama))
    assert isinstance(events[-2], SynthesisFinished) and session.answer.startswith("Answered [")


async def test_sources_are_annotated_against_the_typed_question_in_its_conversation(
        workspace: Workspace, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder(REWRITES[QUESTIONS[1]])
    session = workspace.new_session(QUESTIONS[0], ["docs"])
    await drain(session.run())
    assert set(queries(fake_ollama)) == {QUESTIONS[0]}
    fake_ollama.requests.clear()
    await drain(session.follow_up(QUESTIONS[1]))
    assert session.turn.rewrite == REWRITES[QUESTIONS[1]]                      # a good rewrite is used
    expected = f'{QUESTIONS[1]} (a follow-up to "{QUESTIONS[0]}"; read as: "{REWRITES[QUESTIONS[1]]}")'
    assert set(queries(fake_ollama)) == {expected}
    fake_ollama.requests.clear()
    await drain(session.reannotate([1]))                                      # turn 1's source, its own question
    await session.aclose()
    assert queries(fake_ollama) == [QUESTIONS[0]]


class TwoRuns:
    """A retrieval stage that finds one set of chunks for the typed question and another for anything else."""

    def __init__(self, typed: str, found: Sequence[int], other: Sequence[int]) -> None:
        self.typed, self.found, self.other = typed, found, other

    async def __call__(self, query: str, collections: Sequence[str], *,
                       search_filter: SearchFilter | None = None, strategies: bool = True) -> Retrieval:
        numbers = self.found if query == self.typed else self.other
        hits = [Hit(chunk=make_chunk(n, f"Text {n} about pump seals."), score=1 - i / 10, rel_score=1 - i / 10,
                    legs=("keyword",)) for i, n in enumerate(numbers)]
        return Retrieval(query=query, hits=hits, meta=RetrievalMeta())


async def test_a_follow_up_annotates_at_most_annotate_max_sources(make_settings: Callable[..., Settings],
                                                                  fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = responder("How long do pump seals last?")
    session = new_session(make_settings("retrieve.annotate_max=4"), "How do pump seals fail?",
                          TwoRuns("And how long do they last?", found=[1, 2, 3, 4], other=[5, 6, 7, 8]))
    await drain(session.run())
    fake_ollama.requests.clear()
    await drain(session.follow_up("And how long do they last?"))
    await session.aclose()
    turn = session.turn
    assert turn.rewrite == "How long do pump seals last?"
    assert len(turn.sources) == 4 and len(queries(fake_ollama)) == 4
    assert sorted(s.chunk.id for s in turn.sources) == ["chunk-1", "chunk-2", "chunk-5", "chunk-6"]   # half each


def test_the_fused_cut_keeps_the_typed_questions_best_half() -> None:
    def hits(*ids: str) -> list[Hit]:
        return [_hit(i, 1.0) for i in ids]

    ids = [h.chunk.id for h in fuse_runs([("query", hits("a", "b", "c", "d", "e")),
                                          ("rewrite", hits("v", "w", "x", "y", "z"))], 60, 5)]
    assert ids == ["a", "v", "b", "w", "c"]                    # the rewrite's own hits take at most 5 // 2
    ids = [h.chunk.id for h in fuse_runs([("query", hits("a")), ("rewrite", hits("w", "x", "y", "z"))], 60, 4)]
    assert ids == ["a", "w", "x", "y"]                         # the typed question found less: the rewrite fills in
    ids = [h.chunk.id for h in fuse_runs([("query", hits("a", "b")), ("rewrite", hits("b", "x"))], 60, 16)]
    assert ids == ["b", "a", "x"]                              # under the cap: the whole union


@pytest.mark.parametrize(("rewrite", "why"), [
    *JUNK.values(),
    ("I'm sorry, but I cannot help with that.", "it reads as a refusal, not a question"),
    ("How long do the mechanical seals of a centrifugal pump last?", ""),
    ("mechanical seal lifetime", ""),                               # a query need not be a question
    ("Explain how long pump seals last.", ""),                     # a request is not a statement
    ("What does the manual not say about seals?", ""),             # "not say" in a question is no refusal
])
def test_what_makes_a_rewrite_unusable(rewrite: str, why: str) -> None:
    conversation = [(QUESTIONS[0], "It starts at 3 bar once primed [1].")]
    assert unusable(rewrite, "How long do its seals last?", conversation) == why


def test_the_cli_says_in_one_line_that_a_refusal_was_not_used_as_the_rewrite(tmp_path: Path,
                                                                              fake_ollama: FakeOllama) -> None:
    assert cli(tmp_path, fake_ollama.url, "ingest", str(write_pump_notes(tmp_path)), "-c", "notes").returncode == 0
    fake_ollama.responder = responder(JUNK["refusal"][0])
    assert cli(tmp_path, fake_ollama.url, "ask", "how do pumps start").returncode == 0
    done = cli(tmp_path, fake_ollama.url, "ask", "--follow-up", "and how long does priming take?")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if "rewrite of" in line] == [
        "ragtui: warning: chat's rewrite of the follow-up was not used (it reads as a refusal, not a question): "
        "'The sources do not answer this question.'; retrieving and annotating on the question as typed"]
    # the stand-in annotator's reply quotes nothing its source holds: relevant, and marked so
    assert "Follow-up rewritten" not in done.stdout and "relevant, no quote (by chat" in done.stdout
    assert "Answered [" in done.stdout
