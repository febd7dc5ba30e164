"""The TUI on a team's Chroma server (a real `chroma run` on loopback): the server killed while the app is open
answers keyword-only with a notice saying so, and once it is back the next question uses both legs again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragtui.config import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.widgets.sources import SourcesPanel
from tests.chroma_server import ChromaServer
from tests.fake_ollama import FakeOllama
from tests.tui.test_session import Script, ask, ingest, settle, write_corpus


async def test_the_server_going_away_and_coming_back_while_the_tui_is_open(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama, chroma_server: ChromaServer,
        tmp_path: Path) -> None:
    fake_ollama.responder = Script()
    settings = make_settings(*chroma_server.settings)
    await ingest(settings, write_corpus(tmp_path), "tuiserver")
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot)
        panel = app.query_one(SourcesPanel)
        await ask(app, pilot)
        assert any("vector" in s.legs for s in panel.sources.values())

        chroma_server.stop()
        await ask(app, pilot)
        said = [n.message for n in app.notices if f"Chroma server at 127.0.0.1:{chroma_server.port}" in n.message]
        assert len(said) == 1 and "keyword matches only" in said[0], [n.message for n in app.notices]
        assert panel.sources and all(s.legs == ("keyword",) for s in panel.sources.values())

        chroma_server.start()
        await ask(app, pilot)
        assert any("vector" in s.legs for s in panel.sources.values())
