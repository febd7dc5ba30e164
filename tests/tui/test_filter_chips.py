"""Filters typed in the query bar: `path:`/`heading:` words become chips, narrow the search (the real engine, the
fake Ollama over HTTP), stay with the session's follow-ups and come back when the session is reopened."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.content import Content

from ragtui.config import Settings
from ragtui.model.filters import SearchFilter
from ragtui.tui.app import RagtuiApp
from ragtui.tui.widgets.query import QueryInput
from tests.fake_ollama import Reply
from tests.tui.conftest import main_screen
from tests.tui.test_session import Script, ask, ingest, script, settle, write_corpus

__all__ = ["script"]      # the fixture, used by name


def chips(bar: QueryInput) -> str:
    """The chips' text as the bar's border shows it."""
    return Content.from_markup(bar.border_subtitle).plain.strip()


async def test_filter_words_become_chips_and_stay_with_the_session(make_settings: Callable[..., Settings],
                                                                    tmp_path: Path, script: Script) -> None:
    settings = make_settings("retrieve.min_similarity=0", "keyword.min_query_ic=0")
    await ingest(settings, write_corpus(tmp_path))
    script.answers += [Reply.text("The start valve opens first [1]."), Reply.text("One controller [2].")]
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(110, 30)) as pilot:
        research = main_screen(app).research
        await settle(app, pilot)
        await ask(app, pilot, "pumps start path:valves.txt")
        session = research.session
        assert session is not None and session.turn.query == "pumps start"
        assert session.search_filter == SearchFilter(paths=("valves.txt",))
        assert session.sources and {s.chunk.meta.source for s in session.sources} == {"valves.txt"}
        bar = app.query_one(QueryInput)
        assert chips(bar) == "path:valves.txt"
        await ask(app, pilot, "and the controller")              # a follow-up without filter words keeps it
        assert len(session.turns) == 2 and {s.chunk.meta.source for s in session.sources} == {"valves.txt"}
        assert session.turn.retrieval_meta is not None
        assert session.turn.retrieval_meta.filter == SearchFilter(paths=("valves.txt",))
        session_id = session.id
        await pilot.press("escape", "N")                           # a new session starts without chips
        assert chips(bar) == ""
    assert session_id is not None
    reopened = RagtuiApp(settings, cursor_blink=False)
    async with reopened.run_test(size=(110, 30)) as pilot:
        research = main_screen(reopened).research
        await settle(reopened, pilot)
        await research.reopen(session_id)
        await settle(reopened, pilot)
        assert research.session is not None
        assert research.session.search_filter == SearchFilter(paths=("valves.txt",))
        assert chips(reopened.query_one(QueryInput)) == "path:valves.txt"
