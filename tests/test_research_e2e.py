"""One research session through the real stack: ingest -> hybrid retrieval -> annotation -> synthesis.

Every store is real (Chroma, Whoosh in a temp data dir) and every model call goes
over HTTP to the fake Ollama.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragtui.config import Settings
from ragtui.events import SynthesisFinished
from ragtui.history import HistoryStore
from ragtui.model import AnnotationState
from ragtui.workspace import Workspace
from tests.fake_ollama import FakeOllama, Reply

DOCS = [
    ("pumps.md", "Centrifugal pumps must be primed before they start. A primed pump starts at 3 bar of pressure."),
    ("seals.md", "Mechanical pump seals wear out after about 5,000 hours and then leak."),
    ("lunch.md", "The cafeteria serves soup on Mondays and fish on Fridays."),
]


async def test_ask_over_an_ingested_collection(make_settings: Callable[..., Settings],
                                               fake_ollama: FakeOllama) -> None:
    settings = make_settings("retrieve.max_chunks_per_file=1")
    workspace = Workspace(settings)
    async for _ in workspace.ingest_documents("docs", DOCS):
        pass

    def respond(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        if "EXTRACT" in prompt:
            return Reply.text("[IRRELEVANT!!!]") if "cafeteria" in prompt else Reply.text('"quote" relevant.')
        return Reply.text("Prime the pump first; it starts at 3 bar [1].")

    fake_ollama.responder = respond
    session = workspace.new_session("At what pressure does a centrifugal pump start?", ["docs"])
    events = [e async for e in session.run()]
    await session.aclose()
    workspace.close()

    assert session.sources[0].chunk.meta.source == "pumps.md"
    assert {s.chunk.meta.source for s in session.sources} <= {d[0] for d in DOCS}
    lunch = [s for s in session.sources if s.chunk.meta.source == "lunch.md"]
    assert all(s.state is AnnotationState.IRRELEVANT for s in lunch)
    finished = next(e for e in events if isinstance(e, SynthesisFinished))
    assert finished.stop_reason == "stop" and finished.citations == (1,) and finished.unknown_citations == ()
    prompt = fake_ollama.calls("/api/chat")[-1].body["messages"][-1]["content"]
    assert "[1] SOURCE: docs/pumps.md" in prompt and "cafeteria" not in prompt
    stored = HistoryStore(settings.data_dir).load(session.id)
    assert stored.turn.retrieval_meta and stored.turn.answer == session.answer
