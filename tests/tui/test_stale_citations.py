"""Stale citations in the TUI, over the real engine and the fake Ollama: a session asked in the app, its document
changed and ingested again through the ingest dialog (whose report says the session was re-checked), then the
history list marks the session, the reopened session marks the moved source, and the source viewer opens the
document's current text at the quote's new place."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import DataTable, TextArea

from ragtui.config import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.history import HistoryScreen
from ragtui.tui.screens.ingest import IngestScreen
from ragtui.tui.screens.source_viewer import SourceViewer
from ragtui.tui.widgets.sources import SourcesPanel, SourceTable
from tests.fake_ollama import FakeOllama
from tests.test_citation_recheck import QUESTION, QUOTE, SECTIONS, _quoting, _write
from tests.tui.conftest import main_screen
from tests.tui.test_session import ask, ingest, settle


async def test_a_moved_citation_is_marked_in_the_history_the_sources_and_the_viewer(
        make_settings: Callable[..., Settings], tmp_path: Path, fake_ollama: FakeOllama) -> None:
    settings = make_settings("chunk.strategy=markdown", "chunk.size_tokens=24", "chunk.overlap_pct=0",
                             "retrieve.max_chunks_per_file=1")
    fake_ollama.responder = _quoting
    docs = tmp_path / "docs"
    _write(docs, SECTIONS)
    await ingest(settings, docs, "plant")
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(160, 40)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await ask(app, pilot, QUESTION)
        session = main.research.session.id
        cited = next(s for s in main.research.session.sources if s.chunk.meta.source == "plant.md")

        # the document gets a new first section: the priming rule is now in the next chunk
        _write(docs, {"Scope": "This guide covers the equipment of the plant room.", **SECTIONS})
        await pilot.press("tab", "i")
        await pilot.pause()
        assert isinstance(app.screen, IngestScreen)
        app.screen.query_one("#ingest-path").value = str(docs)
        app.screen.query_one("#ingest-collection").value = "plant"
        await pilot.press("enter")
        await settle(app, pilot)
        log = "\n".join(str(line.text) for line in app.screen.query_one("#ingest-log").lines)
        assert "history: re-checked 1 session citing a changed or removed file: 1 stale citation" in log
        await pilot.press("escape")
        await settle(app, pilot)

        await pilot.press("h")
        await settle(app, pilot)
        assert isinstance(app.screen, HistoryScreen)
        table = app.screen.query_one(DataTable)
        assert str(table.get_row(str(session))[-1]) == "1 stale"
        await pilot.press("enter")
        await settle(app, pilot)
        assert main.research.session.id == session

        panel = app.query_one(SourcesPanel)
        panel.show_tab("all")
        moved = panel.sources[cited.number]
        assert moved.citation is not None and moved.citation.state == "moved"
        note = app.query_one("#all-table", SourceTable).get_cell(str(cited.number), "annotation")
        assert str(note).startswith("moved: ")
        others = [n for n in panel.sources if n != cited.number]
        assert all(not str(app.query_one("#all-table", SourceTable).get_cell(str(n), "annotation"))
                   .startswith(("moved", "changed", "gone")) for n in others)
        table = app.query_one("#all-table", SourceTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(str(cited.number)))
        await pilot.pause()
        assert f"the document changed since: {moved.citation.verdict}" in str(app.query_one("#source-detail").render())

        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, SourceViewer)
        assert "this citation moved to plant/plant.md" in app.screen.document.note
        area = app.screen.query_one(TextArea)
        assert "Scope" in area.text and QUOTE in area.selected_text      # the current text, at the new place
        assert app.screen.document.start > 0
