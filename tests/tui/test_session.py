"""End to end: the real engine (ingest, hybrid retrieval, research sessions, history) behind the TUI,
the LLM over HTTP to the fake Ollama server, the whole session driven by keys.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.widgets import DataTable, TextArea

from ragtui.config import Settings
from ragtui.events import SynthesisFinished, SynthesisToken
from ragtui.model.conversation import AnnotationState, Override
from ragtui.tui.app import RagtuiApp
from ragtui.tui.messages import Research
from ragtui.tui.screens.help import HelpScreen
from ragtui.tui.screens.history import HistoryScreen
from ragtui.tui.screens.ingest import IngestScreen
from ragtui.tui.screens.source_viewer import SourceViewer
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.status import StatusLine
from ragtui.tui.widgets.synthesis import SynthesisView
from tests.fake_ollama import FakeOllama, Reply, fenced
from tests.tui.conftest import handled, main_screen
from tests.tui.fake_editor import fake_editor

CORPUS = {
    "pumps.md": "# Pumps\n\n## Starting\n\nCentrifugal pumps start at 3 bar. They need priming first.\n",
    "seals.txt": "Pump seals wear out after 5,000 hours. Replace the pump seals when the pumps start leaking.\n",
    "cafeteria.txt": "The cafeteria coffee pumps start at noon. The menu changes on Mondays.\n",
    "valves.txt": "The start valve opens before the pumps run. Valves and pumps share one controller.\n",
}
QUERY = "how do pumps start"


class Script:
    """Annotation verdicts by content (the cafeteria extract is irrelevant) and queued synthesis answers."""

    def __init__(self) -> None:
        self.answers: list[Reply] = []
        self.annotations = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        if "EXTRACT:" in prompt:
            self.annotations += 1
            extract = fenced(prompt.split("EXTRACT:", 1)[1])
            if "cafeteria" in extract:
                return Reply.text("IRRELEVANT!!! This is about coffee.")
            return Reply.text(f'"{extract.split(".")[0]}." Relevant (call {self.annotations}).')
        return self.answers.pop(0) if self.answers else Reply.text("Pumps start at 3 bar [1].")


async def ingest(settings: Settings, folder: Path, collection: str = "docs") -> None:
    from ragtui.workspace import Workspace

    async with Workspace(settings) as workspace:
        async for _ in workspace.ingest([folder], collection):
            pass


def write_corpus(root: Path) -> Path:
    """CORPUS as files in `root`/corpus; the folder."""
    folder = root / "corpus"
    folder.mkdir()
    for name, text in CORPUS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path)


@pytest.fixture
def script(fake_ollama: FakeOllama) -> Script:
    fake_ollama.responder = script = Script()
    return script


@pytest.fixture
async def settings(make_settings: Callable[..., Settings], corpus: Path) -> Settings:
    settings = make_settings()
    await ingest(settings, corpus)
    return settings


DIALOGS = {"history", "ingest-dialog", "new-collection"}  # workers that wait for a screen to close


async def settle(app: RagtuiApp, pilot) -> None:
    """Let the working workers finish (awaited one by one: a cancelled one must not raise here)."""
    for _ in range(3):
        for worker in list(app.workers):
            if worker.group not in DIALOGS and not worker.is_cancelled:
                await asyncio.wait_for(worker.wait(), 120)  # a guard against hanging, not a timing check
        await handled(main_screen(app).research)  # what the workers posted is on screen
        await pilot.pause()


async def ask(app: RagtuiApp, pilot, query: str = QUERY) -> None:
    if app.focused is app.query_one("#query"):
        await pilot.press("escape")  # leave the query bar, so that / is the key and not a character
    await pilot.press("slash", *query, "enter")
    await settle(app, pilot)


async def test_a_whole_session_by_keys(settings: Settings, script: Script, fake_ollama: FakeOllama) -> None:
    script.answers += [Reply.text("Pumps start at 3 bar [1] and", done_reason="length"),
                       Reply.text("and need priming first [1].")]
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        assert main.active == {"docs"}
        await ask(app, pilot)
        await pilot.press("tab")  # the query bar keeps the focus after enter; tab goes on to the sources
        panel = app.query_one(SourcesPanel)
        synthesis = app.query_one(SynthesisView)
        session = main.research.session
        assert session is not None and session.id
        assert panel.counts()["all"] == len(session.sources) >= 3
        cafeteria = next(s for s in panel.sources.values() if "cafeteria" in s.chunk.text)
        assert cafeteria.state is AnnotationState.IRRELEVANT and panel.counts()["filtered"] == 1
        assert all(s.annotation for s in panel.sources.values())
        assert panel.sources == {s.number: s for s in session.sources}   # the session's sources, annotator and all
        # the answer streamed, stopped for length, and says so
        assert synthesis.text == "Pumps start at 3 bar [1] and" and session.turn.truncated
        assert "Press c to continue" in str(app.query_one("#synthesis-banner").render())

        await pilot.press("c")
        await settle(app, pilot)
        assert synthesis.text == session.answer == "Pumps start at 3 bar [1] and need priming first [1]."
        assert "(cite:1)" in synthesis.markdown.source

        # r re-annotates the highlighted source: one more annotation call, its text refreshed
        before = script.annotations
        first = panel.selected()
        await pilot.press("r")
        await settle(app, pilot)
        assert script.annotations == before + 1
        assert panel.sources[first.number].annotation == session.source(first.number).annotation
        assert f"(call {before + 1})" in panel.sources[first.number].annotation
        assert panel.sources[first.number] == session.source(first.number)

        # x on the Filtered tab rescues the cafeteria source; s writes the answer again with it
        app.query_one("#source-tabs").active = "filtered"
        app.query_one("#filtered-table", DataTable).focus()
        await pilot.pause()
        await pilot.press("x")
        assert session.source(cafeteria.number).override is Override.RESCUED
        assert panel.counts()["filtered"] == 0
        script.answers.append(Reply.text(f"Coffee pumps start at noon [{cafeteria.number}]."))
        await pilot.press("s")
        await settle(app, pilot)
        assert cafeteria.number in session.turn.prompt_numbers
        assert synthesis.text == f"Coffee pumps start at noon [{cafeteria.number}]."


async def test_a_query_reaches_the_view_as_messages_in_order(settings: Settings, script: Script) -> None:
    """Each engine event is one message to the research view, handled in the engine's order."""
    handled_messages: list[Message] = []

    def hook(message: Message) -> None:
        if isinstance(message, Research.EngineEvent | Research.Started | Research.Cancelled | Research.Failed):
            handled_messages.append(message)

    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30), message_hook=hook) as pilot:
        await settle(app, pilot)
        await ask(app, pilot)
        session = main_screen(app).research.session
        assert session is not None
        answer = app.query_one(SynthesisView).text
    assert len({id(m) for m in handled_messages}) == len(handled_messages)  # once each: they do not bubble
    kinds = [type(m.event if isinstance(m, Research.EngineEvent) else m).__name__ for m in handled_messages]
    n = len(session.sources)
    assert n >= 3
    assert kinds[:3] == ["Started", "RetrievalStarted", "SourcesReady"]
    assert sorted(kinds[3:3 + 2 * n]) == ["AnnotationFinished"] * n + ["AnnotationStarted"] * n
    tokens = kinds[3 + 2 * n:-2]
    assert tokens[0] == "SynthesisStarted" and set(tokens[1:]) == {"SynthesisToken"}
    assert kinds[-2:] == ["SynthesisFinished", "SessionSaved"]
    events = [m.event for m in handled_messages if isinstance(m, Research.EngineEvent)]
    streamed = "".join(e.text for e in events if isinstance(e, SynthesisToken))
    finished = next(e for e in events if isinstance(e, SynthesisFinished))
    assert streamed == finished.text == answer == session.answer == "Pumps start at 3 bar [1]."


async def test_history_reopens_an_earlier_session(settings: Settings, script: Script) -> None:
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await ask(app, pilot, QUERY)
        first_id, first_answer = main.research.session.id, main.research.session.answer
        script.answers.append(Reply.text("Seals last 5,000 hours [1]."))
        await pilot.press("tab", "N")           # to the sources; a new session, not a follow-up of the first
        await ask(app, pilot, "when do seals wear out")
        assert main.research.session.id != first_id
        await pilot.press("tab", "h")
        await settle(app, pilot)
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("down", "e")
        exported = settings.data_dir / "exports" / f"session-{first_id}.md"
        assert QUERY in exported.read_text(encoding="utf-8")
        await pilot.press("enter")  # newest first: the second row is the first session
        await settle(app, pilot)
        assert not isinstance(app.screen, HistoryScreen)
        assert main.research.session.id == first_id
        assert app.query_one("#query").value == QUERY
        assert app.query_one(SynthesisView).text == first_answer
        assert len(app.query_one(SourcesPanel).sources) == len(main.research.session.sources)


async def test_escape_cancels_a_slow_stream_and_keys_still_work(settings: Settings, script: Script,
                                                                 fake_ollama: FakeOllama) -> None:
    script.answers.append(Reply(pieces=[f"word{i} " for i in range(200)], delay=0.05))
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await pilot.press("escape", "slash", *QUERY, "enter")
        synthesis = app.query_one(SynthesisView)
        for _ in range(2000):  # until the first tokens are on screen
            if synthesis.text:
                break
            await pilot.pause(0.01)
        assert synthesis.text and main.research.busy
        await pilot.press("tab", "question_mark")  # handled while the answer is still streaming
        assert isinstance(app.screen, HelpScreen) and main.research.busy
        await pilot.press("escape")  # closes help
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("escape")  # cancels the stream
        await settle(app, pilot)
        assert not main.research.busy
        assert len(synthesis.text.split()) < 200
        assert main.research.session.turn.stop_reason == "cancelled"
        assert "Cancelled" in str(app.query_one("#synthesis-banner").render())
        await pilot.press("b")  # still responsive
        assert app.query_one("#collections-pane").display is False


async def test_enter_opens_the_source_in_its_document(settings: Settings, script: Script) -> None:
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await ask(app, pilot)
        await pilot.press("tab", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, SourceViewer)
        source = app.screen.source
        assert app.screen.document.note == ""
        area = app.screen.query_one(TextArea)
        assert area.selected_text == source.chunk.text
        assert area.text == CORPUS[source.chunk.meta.source].replace("\r\n", "\n") or source.chunk.text in area.text


async def test_no_hits_and_an_empty_collection_are_said(settings: Settings, script: Script) -> None:
    from ragtui.library import CollectionRegistry

    CollectionRegistry(settings).create("blank", "nothing yet")
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        assert main.active == {"docs"}  # an empty collection is listed, not active
        views = {v.name: v for v in main.collection_views}
        assert views["blank"].state == "empty" and views["blank"].chunks == 0
        app.query_one("#collections").focus()
        await pilot.press("space", "down", "space")  # blank on, docs off
        assert main.active == {"blank"}
        await ask(app, pilot)
        assert app.query_one(SourcesPanel).sources == {}
        assert "No hits" in str(app.query_one("#source-detail").render())
        assert "No hits" in str(app.query_one("#synthesis-banner").render())


async def test_ollama_down_gives_keyword_only_sources_and_says_why(settings: Settings) -> None:
    down = settings.replace(ollama__host="http://127.0.0.1:9")
    app = RagtuiApp(down, cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        status = str(app.query_one(StatusLine).render())
        assert "down" in status and "KEYWORD-ONLY" in status
        await ask(app, pilot)
        panel = app.query_one(SourcesPanel)
        assert panel.sources and all(s.state is AnnotationState.OFF for s in panel.sources.values())
        assert all(s.legs == ("keyword",) for s in panel.sources.values())
        kept = main.research.session
        assert kept is not None and kept.id is not None   # saved: reopen it when Ollama is back
        assert any("127.0.0.1:9" in n.message and "Sources only" in n.message for n in app.notices)
        assert "127.0.0.1:9" in str(app.query_one("#synthesis-banner").render())


async def test_no_chat_model_configured_gives_sources_only_said_calmly(settings: Settings) -> None:
    """The demo without Ollama: no llm.model is the expected path, not a failure in red."""
    app = RagtuiApp(settings.replace(llm__model=""), cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot)
        await ask(app, pilot)
        panel = app.query_one(SourcesPanel)
        assert panel.sources and all(s.state is AnnotationState.OFF for s in panel.sources.values())
        status = str(app.query_one(StatusLine).render())
        assert "failed" not in status, status
        assert not str(app.query_one("#synthesis-banner").render()).strip()
        assert [(n.severity, n.message) for n in app.notices if "chat model" in n.message] == [
            ("information", "No chat model configured: sources only (set [llm] model to annotate and answer).")]
        assert not any("Synthesis failed" in n.message or "llm.model is not set" in n.message for n in app.notices)


async def test_wordnet_missing_is_shown(make_settings: Callable[..., Settings]) -> None:
    app = RagtuiApp(make_settings("synonyms.enabled=true"), cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot)
        status = app.query_one(StatusLine)
        assert status.wordnet is False and "not installed" in status.wordnet_reason
        assert "WordNet off" in str(status.render())


async def test_ingest_screen_runs_the_real_ingest(make_settings: Callable[..., Settings], corpus: Path,
                                                  script: Script) -> None:
    app = RagtuiApp(make_settings(), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        assert main.collection_views == []
        await pilot.press("escape", "i")
        await pilot.pause()
        assert isinstance(app.screen, IngestScreen)
        app.screen.query_one("#ingest-path").value = str(corpus)  # a long temp path: set, not typed
        await pilot.press("tab", *"notes", "enter")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, IngestScreen) and screen.changed
        assert "Finished" in str(screen.query_one("#ingest-hint").render())
        # the pane behind the dialog is already up to date, and the new collection is searched next
        assert [v.name for v in main.collection_views] == ["notes"] and main.active == {"notes"}
        assert "No query yet" in str(app.query_one("#source-detail").render())
        await pilot.press("escape")
        await settle(app, pilot)
        views = {v.name: v for v in main.collection_views}
        assert views["notes"].chunks >= len(CORPUS)


async def test_after_n_a_habitual_slash_is_not_typed_into_the_question(settings: Settings, script: Script) -> None:
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await ask(app, pilot, QUERY)
        await pilot.press("tab", "N")           # N puts the focus in the query bar, empty
        await pilot.pause()
        assert app.focused is app.query_one("#query")
        await pilot.press("slash", *"why", "slash", "x")
        assert app.query_one("#query").value == "why/x"   # only the first /, the habit, is eaten


async def test_reopening_a_session_whose_answer_failed_says_why(settings: Settings, script: Script) -> None:
    script.answers.append(Reply(status=500, error="GPU fell over"))
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await ask(app, pilot, QUERY)
        failed_id = main.research.session.id
        assert "GPU fell over" in main.research.session.turn.error
        await pilot.press("tab", "N")
        await ask(app, pilot, "when do seals wear out")
        await pilot.press("tab", "h")
        await settle(app, pilot)
        await pilot.press("down", "enter")      # newest first: the failed session is the second row
        await settle(app, pilot)
        assert main.research.session.id == failed_id
        note = str(app.query_one("#synthesis-banner").render())
        assert "Synthesis failed" in note and "GPU fell over" in note


async def test_the_quick_switcher_reopens_a_past_session_by_its_question(settings: Settings, script: Script) -> None:
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await ask(app, pilot, QUERY)
        first_id = main.research.session.id
        await pilot.press("tab", "N")
        await ask(app, pilot, "when do seals wear out")
        assert main.research.session.id != first_id
        await pilot.press("ctrl+o")
        await pilot.pause()
        await pilot.press(*"pumps start")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await settle(app, pilot)
        assert main.research.session.id == first_id
        assert app.query_one("#query").value == QUERY


async def test_o_in_the_history_opens_the_sessions_export_in_the_editor(settings: Settings, script: Script,
                                                                        tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDITOR", str(fake_editor(tmp_path, "reader")))
    monkeypatch.delenv("VISUAL", raising=False)
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await ask(app, pilot, QUERY)
        session_id = main.research.session.id
        await pilot.press("tab", "h")
        await settle(app, pilot)
        await pilot.press("o")
        await pilot.pause()
        seen = (tmp_path / "reader.seen").read_text(encoding="utf-8")
        assert QUERY in seen
        assert seen == (settings.data_dir / "exports" / f"session-{session_id}.md").read_text(encoding="utf-8")


async def test_the_ingest_screen_ingests_a_folder_of_a_hundred_files_through_its_processes(
        make_settings: Callable[..., Settings], tmp_path: Path, script: Script) -> None:
    """100 files: extracted in a worker process (`ingest.workers`) and their vectors written from a process of
    their own (`ingest.vector_process_files`); both are spawned from inside the TUI, whose stderr is Textual's
    print capture, with no file descriptor (spawning.py)."""
    folder = tmp_path / "hundred"
    folder.mkdir()
    for i in range(100):
        (folder / f"note-{i:03d}.txt").write_text(f"Note {i}: the valve number {i} seals the pump casing.\n")
    settings = make_settings()
    assert settings.ingest.workers >= 1 and settings.ingest.vector_process_files <= 100
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await pilot.press("escape", "i")
        await pilot.pause()
        assert isinstance(app.screen, IngestScreen)
        app.screen.query_one("#ingest-path").value = str(folder)
        await pilot.press("tab", *"hundred", "enter")
        screen = app.screen
        for _ in range(600):
            if not screen.running and screen.changed:
                break
            await pilot.pause(0.1)
        assert isinstance(screen, IngestScreen)
        assert "Finished" in str(screen.query_one("#ingest-hint").render()), screen.query_one("#ingest-hint").render()
        await pilot.press("escape")
        await settle(app, pilot)
        views = {v.name: v for v in main.collection_views}
        assert views["hundred"].chunks == 100 and views["hundred"].state == "ready"
