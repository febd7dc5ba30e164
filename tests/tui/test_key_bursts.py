"""Keys read in one burst (a quick typist, a paste, or keys typed while the app was busy) are handled as if typed
one by one: a key that moves the focus moves it before the keys after it are handed out. Textual gives each key to
the widget focused when the app reads it; an ordinary binding moves the focus only once the old focus has handled
the key, by when the rest of the burst was already given to that widget. So the question typed right after `/` on
the sources reached their one-letter keys, and its `h` opened the history: the first-run demo test hung there on a
loaded machine (its pilot's keys came in together) with the ingest finished and no question asked."""

from __future__ import annotations

from ragtui.tui.screens.main import MainScreen
from ragtui.tui.widgets.collections import CollectionsPane
from ragtui.tui.widgets.sources import SourcesPanel
from tests.tui.conftest import feed, quiet_app
from tests.tui.scripted import ANSWER, finished_session
from tests.tui.test_interaction import burst

QUESTION = "What does natural selection act on?"


async def on_the_sources(app, pilot) -> None:
    """A finished session on screen, the focus on its sources' rows."""
    await feed(app, finished_session())
    app.query_one(SourcesPanel).active_table.focus()
    await pilot.pause()


async def test_a_question_typed_right_after_slash_goes_to_the_query_bar(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await on_the_sources(app, pilot)
        await burst(app, pilot, ["slash", *QUESTION])
        assert isinstance(app.screen, MainScreen)          # not the history (h), the details (w), ...
        assert app.query_one("#query").value == QUESTION


async def test_a_question_typed_right_after_new_session_goes_to_the_query_bar(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await on_the_sources(app, pilot)
        await burst(app, pilot, ["N", "slash", *QUESTION])    # the habitual / after N is still eaten
        assert isinstance(app.screen, MainScreen)
        assert app.query_one("#query").value == QUESTION


async def test_words_typed_right_after_f_filter_the_sources(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await on_the_sources(app, pilot)
        panel = app.query_one(SourcesPanel)
        await burst(app, pilot, ["3", "f", *"experiments"])
        assert app.query_one("#source-filter").value == "experiments"
        assert [int(str(key.value)) for key in panel.active_table.rows] == [4]
        await burst(app, pilot, ["escape"])               # esc is still the filter's own: it clears it
        assert app.query_one("#source-filter").value == ""
        assert app.focused is panel.active_table and panel.active_table.row_count == 5


async def test_a_key_right_after_esc_or_tab_acts_on_the_pane_not_the_query_bar(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, finished_session())
        query = app.query_one("#query")
        query.value = "pumps"
        for leave in ("escape", "tab"):
            query.focus()
            await pilot.pause()
            said = len(app.notices)
            await burst(app, pilot, [leave, "y"])         # y on a pane copies the answer
            assert query.value == "pumps"
            assert [n.message for n in app.notices[said:] if n.message.startswith("Sent the answer")]
            assert app.clipboard.startswith(ANSWER)


async def test_a_motion_right_after_b_moves_in_the_collections_list(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await on_the_sources(app, pilot)
        await burst(app, pilot, ["b", "G"])
        listing = app.query_one("#collections")
        assert app.query_one(CollectionsPane).display and app.focused is listing
        assert listing.index == len(listing) - 1

