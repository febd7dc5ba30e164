"""Layout by focus at 80x24, keys that move between panes and tabs, and notices that stay out of the way."""

from __future__ import annotations

from textual.widgets import DataTable, ListView
from textual.widgets._toast import Toast

from ragtui.events import Notice, SourcesReady, SynthesisStarted, SynthesisToken
from ragtui.tui.screens.notices import NoticesScreen
from ragtui.tui.widgets.query import QueryInput
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.status import StatusLine
from ragtui.tui.widgets.synthesis import SynthesisView
from tests.tui.conftest import feed, main_screen, post_events, quiet_app
from tests.tui.scripted import finished_session, make_sources


def source_rows(app) -> int:
    """Rows the sources table has room for: the tab's pane height less the table's header."""
    return app.query_one("#source-tabs ContentSwitcher").region.height - 1


async def test_80x24_gives_the_room_to_the_pane_in_use(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, finished_session())
        panel = app.query_one(SourcesPanel)
        synthesis = app.query_one(SynthesisView)
        panel.active_table.focus()
        await pilot.pause()
        assert source_rows(app) >= 8          # source rows under the header
        assert synthesis.region.height >= 3                      # the answer's first lines, one key away
        await pilot.press("tab")
        assert app.focused is synthesis
        await pilot.pause()
        assert synthesis.region.height >= 12 and source_rows(app) >= 2
        await pilot.press("shift+tab")
        await pilot.pause()
        assert source_rows(app) >= 8


async def test_a_streaming_answer_takes_the_room_unless_the_sources_are_in_use(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, [SourcesReady(tuple(make_sources()), None)])
        screen = main_screen(app)
        assert app.focused is app.query_one(QueryInput) and screen.research.expanded == "sources"
        await post_events(app, [SynthesisStarted("chat", (1, 2)), SynthesisToken("Natural selection ")])
        await pilot.pause()
        assert screen.research.expanded == "answer" and app.query_one(SynthesisView).region.height >= 12
        assert str(app.query_one(StatusLine).render()).startswith("writing")
        app.query_one(SourcesPanel).active_table.focus()
        await post_events(app, [SynthesisStarted("chat", (1, 2))])
        assert screen.research.expanded == "sources"


async def test_tab_follows_the_screen_and_number_keys_pick_the_tab(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(120, 30)) as pilot:
        await feed(app, finished_session())
        panel = app.query_one(SourcesPanel)
        order = []
        for _ in range(4):
            await pilot.press("tab")
            order.append(app.focused)
        assert order == [panel.active_table, app.query_one(SynthesisView), app.query_one("#collections", ListView),
                         app.query_one(QueryInput)]
        await pilot.press("tab", "2")
        assert app.query_one("#source-tabs").active == "filtered" and app.focused is app.query_one("#filtered-table")
        assert panel.counts()["filtered"] == app.focused.row_count == 2
        await pilot.press("3")
        assert app.focused is app.query_one("#all-table", DataTable) and app.focused.row_count == 5
        await pilot.press("1")
        assert app.focused is app.query_one("#relevant-table", DataTable)


async def test_slash_focuses_the_bar_without_typing_itself(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        bar = app.query_one(QueryInput)
        bar.value = "earlier question"
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("slash")
        assert app.focused is bar and bar.value == "earlier question" and bar.selected_text == "earlier question"
        await pilot.press(*"new one")
        assert bar.value == "new one"


async def test_notices_are_one_line_one_at_a_time_off_the_answer_and_kept_whole(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    long = ("3 relevant source(s) did not fit the context window (4096 tokens, llm.max_tokens 1024, "
            "llm.context_chunks 20): [4] [5] [6] and the [llm] section says how to change it")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await feed(app, finished_session())
        await post_events(app, [Notice("warning", "first notice"), Notice("warning", long)])
        await pilot.pause()
        await pilot.pause()   # the first toast's removal
        toasts = list(app.screen.query(Toast))
        assert len(toasts) == 1
        toast = toasts[0]
        assert toast.region.height == 1 and "(! all)" in str(toast.render())
        assert not toast.region.overlaps(app.query_one(SynthesisView).region)
        assert not toast.region.overlaps(app.query_one(SourcesPanel).region)
        assert [n.message for n in app.notices][-2:] == ["first notice", long]
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("exclamation_mark")
        assert isinstance(app.screen, NoticesScreen)
        shown = "\n".join(str(line.text) for line in app.screen.query_one("#notices-log").lines)
        assert "[llm] section" in shown and "first notice" in shown


async def test_the_detail_shows_the_chunk_with_its_matched_window_standing_out(snapshot_settings) -> None:
    import dataclasses

    from ragtui.llm.window import WINDOW_CHARS, best_window

    filler = "The voyage went on for weeks along the coast without any event worth noting. " * 30
    passage = "Finches on each island had beaks shaped for the seeds found there."
    source = make_sources()[0]
    text = filler + passage + " " + filler
    source = dataclasses.replace(source, chunk=dataclasses.replace(source.chunk, text=text))
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(200, 50)):
        panel = app.query_one(SourcesPanel)
        panel.query_words = ("why", "do", "finches", "have", "different", "beaks")
        shown = panel.chunk_text(source)
        start, end = best_window(text, " ".join(panel.query_words), WINDOW_CHARS)
        assert start <= text.index(passage) < end < len(text)

        def dim_at(offset: int) -> bool:
            return bool(shown.get_style_at_offset(app.console, offset).dim)

        assert dim_at(0) and dim_at(len(text) - 1) and not dim_at(text.index(passage))
        marked = {shown.plain[s.start:s.end].lower() for s in shown.spans if "reverse" in str(s.style)}
        assert marked == {"finches", "beaks"}                     # the query's words; "why", "do" are not
        await feed(app, [SourcesReady((source,), None)])
        assert passage in str(app.query_one("#source-detail").render())
