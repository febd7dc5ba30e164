"""A conversation driven by keys: the real engine behind the TUI, every LLM call to the fake Ollama server.

Ask, follow up from the same query bar (rewritten, retrieved twice, answered with
turn 1 as context), look back at turn 1, see why a source was found, re-annotate
with a model picked from the ones Ollama lists, and start a fresh session.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList

from ragtui.config import Settings
from ragtui.history import HistoryStore
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.details import DetailsScreen
from ragtui.tui.screens.model_picker import ModelPickerScreen
from ragtui.tui.screens.source_viewer import SourceViewer
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.synthesis import SynthesisView
from ragtui.tui.widgets.turns import TurnBar
from tests.fake_ollama import FakeOllama, Reply, fenced
from tests.tui.conftest import main_screen
from tests.tui.test_session import QUERY, ask, ingest, settle, write_corpus

REWRITE = "How long do centrifugal pump seals last?"


def respond(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]["content"]
    if "EXTRACT:" in last:
        return Reply.text(f'"{fenced(last.split("EXTRACT:", 1)[1]).split(".")[0]}." Relevant ({body["model"]}).')
    if last.endswith("Standalone question:"):
        return Reply.text(REWRITE)
    first = last.split("SOURCES:\n\n[", 1)[1].split("]", 1)[0]
    return Reply.text(f"Answer from [{first}].")


@pytest.fixture
async def settings(make_settings: Callable[..., Settings], tmp_path: Path) -> Settings:
    settings = make_settings()
    await ingest(settings, write_corpus(tmp_path))
    return settings


async def test_a_conversation_by_keys(settings: Settings, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = respond
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        query_bar = app.query_one("#query")
        assert str(query_bar.border_title).startswith("Query · docs")
        await ask(app, pilot)
        session = main.research.session
        assert session is not None and len(session.turns) == 1
        assert str(query_bar.border_title) == "Follow-up (turn 2) · docs · N: new session"
        turn1 = {s.number for s in session.sources}

        await ask(app, pilot, "and the seals?")
        assert main.research.session is session and len(session.turns) == 2
        assert session.turn.rewrite == REWRITE and session.turn.context_turns == (1,)
        panel = app.query_one(SourcesPanel)
        assert set(panel.sources) == {s.number for s in session.turn.sources} and not set(panel.sources) & turn1
        bar = str(app.query_one(TurnBar).render())
        assert "Turn 2 of 2: and the seals?" in bar and f"also retrieved as: {REWRITE} (by chat)" in bar
        synthesis = app.query_one(SynthesisView)
        assert synthesis.text == session.answer == f"Answer from [{min(panel.sources)}]."

        await pilot.press("tab", "left_square_bracket")   # to the sources, then back to turn 1: its sources and answer
        assert set(panel.sources) == turn1 and synthesis.text == session.turns[0].answer
        assert "Turn 1 of 2" in str(app.query_one(TurnBar).render())
        await pilot.press("right_square_bracket")
        assert set(panel.sources) == {s.number for s in session.turn.sources}

        await pilot.press("w")                             # why this source
        assert isinstance(app.screen, DetailsScreen)
        shown = "\n".join(app.screen.lines)
        selected = panel.selected()
        assert selected is not None and f"Source [{selected.number}]" in shown
        assert "Question as typed:" in shown and f"Rewritten question: {REWRITE}" in shown
        assert "typed question: rank" in shown and "words kept:" in shown
        await pilot.press("escape")
        await pilot.press("enter")                         # the source viewer, and w from there
        await settle(app, pilot)
        assert isinstance(app.screen, SourceViewer)
        await pilot.press("w")
        assert isinstance(app.screen, DetailsScreen)
        await pilot.press("escape", "escape")

        await pilot.press("m")                             # re-annotate [N] with the annotator model
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, ModelPickerScreen)
        offered = [str(o.prompt) for o in picker.query_one(OptionList).options]
        assert offered[-2:] == ["chat  (current)", "annotator"]   # as Ollama lists them, the current one chosen
        assert "nomic-embed-text" not in offered                    # the configured embedder is not offered
        await pilot.press("down", "enter")
        await settle(app, pilot)
        again = session.source(selected.number)
        assert again.annotated_by == "annotator" and again.annotation.endswith("Relevant (annotator).")
        stored = HistoryStore(settings.data_dir).load(session.id or 0)
        assert stored.turns[1].sources[[s.number for s in stored.turns[1].sources].index(selected.number)] \
            .annotated_by == "annotator"

        await pilot.press("N")                             # a fresh session: the next query is not a follow-up
        assert main.research.session is None and str(query_bar.border_title).startswith("Query · docs")
        await ask(app, pilot, QUERY)
        fresh = main.research.session
        assert fresh is not None and fresh.id != session.id and len(fresh.turns) == 1
