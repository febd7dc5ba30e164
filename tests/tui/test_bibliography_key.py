"""`b` in the history screen writes the session's bibliography as BibTeX and CSL-JSON under <data dir>/exports/."""

from __future__ import annotations

import json

import bibtexparser

from ragtui.config import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.history import HistoryScreen
from tests.tui.conftest import main_screen
from tests.tui.test_session import Script, ask, corpus, script, settings, settle

__all__ = ["corpus", "script", "settings"]      # the fixtures, used by name


async def test_b_exports_the_bibliography_of_a_session(settings: Settings, script: Script) -> None:
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await ask(app, pilot)
        session = main_screen(app).research.session
        assert session is not None and session.id and session.turn.citations == (1,)
        await pilot.press("tab", "h")
        await settle(app, pilot)
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("b")
        await settle(app, pilot)
        exports = settings.data_dir / "exports"
        bib = bibtexparser.parse_string((exports / f"session-{session.id}.bib").read_text(encoding="utf-8"))
        cited = session.source(1).chunk.meta.source
        assert [e.fields_dict["title"].value for e in bib.entries] == [cited]     # a text file: its name
        csl = json.loads((exports / f"session-{session.id}.csl.json").read_text(encoding="utf-8"))
        assert [i["title"] for i in csl["items"]] == [cited]
        assert csl["citations"] == [{"number": 1, "turn": 1, "citationItems": [{"id": bib.entries[0].key}]}]
        assert "Exported to" in str(app.screen.query_one("#history-note").render())
