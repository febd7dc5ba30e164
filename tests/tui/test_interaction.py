"""Keyboard-driven tests of the app's own behaviour (screens, copying, layout), engine events fed in."""

from __future__ import annotations

from textual.widgets import DataTable, TextArea

from ragtui.tui.screens.help import HelpScreen
from ragtui.tui.screens.ingest import IngestScreen
from ragtui.tui.screens.new_collection import NewCollectionScreen
from ragtui.tui.screens.source_viewer import SourceViewer
from ragtui.tui.widgets.collections import CollectionsPane
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.synthesis import SynthesisView
from tests.tui.conftest import feed, main_screen, quiet_app
from tests.tui.scripted import ANSWER, finished_session


async def open_ingest(pilot) -> None:
    """The ingest dialog, opened with its key from the sources table (the query bar would type the key)."""
    pilot.app.query_one(SourcesPanel).active_table.focus()
    await pilot.press("i")
    await pilot.pause()
    assert isinstance(pilot.app.screen, IngestScreen)


async def test_help_opens_with_question_mark_and_closes_with_escape(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_enter_on_a_row_opens_the_viewer_with_the_chunk_selected(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, finished_session())
        table = app.query_one("#relevant-table", DataTable)
        table.focus()
        await pilot.press("down", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, SourceViewer)
        assert app.screen.source.number == 2
        area = app.screen.query_one(TextArea)
        assert area.selected_text == app.screen.source.chunk.text
        await pilot.press("escape")
        assert not isinstance(app.screen, SourceViewer)


async def test_a_citation_link_opens_its_source(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, finished_session())
        app.query_one(SynthesisView).post_message(SynthesisView.CitationClicked(3))
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, SourceViewer) and app.screen.source.number == 3


async def test_y_copies_the_answer_and_saves_it(snapshot_settings) -> None:
    settings = snapshot_settings()
    app = quiet_app(settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("escape")  # leave the query bar, where y would be typed
        await pilot.press("y")
        assert any("No answer" in n.message for n in app.notices)
        await feed(app, finished_session())
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("y")
        assert app.clipboard.startswith(ANSWER) and "\n\nSources:\n[1] " in app.clipboard
        assert (settings.data_dir / "clipboard.md").read_text(encoding="utf-8") == app.clipboard
        await pilot.press("Y")
        assert app.clipboard == app.query_one(SourcesPanel).sources[1].chunk.text


async def test_narrow_terminal_hides_collections_until_b(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, finished_session())
        pane = app.query_one(CollectionsPane)
        assert not pane.display
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("b")
        assert pane.display and app.focused is app.query_one("#collections")
        await pilot.press("b")
        assert not pane.display


async def test_wide_terminal_puts_answer_beside_sources(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(200, 60)) as pilot:
        await feed(app, finished_session())
        await pilot.pause()
        sources, synthesis = app.query_one("#sources"), app.query_one("#synthesis")
        assert app.query_one(CollectionsPane).display
        assert synthesis.region.x > sources.region.x and synthesis.region.y == sources.region.y
        assert app.query_one(SourcesPanel).wide


async def test_b_works_at_every_width_and_its_choice_holds_across_resizes(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(200, 60)) as pilot:
        pane = app.query_one(CollectionsPane)
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("b")
        assert not pane.display
        await pilot.resize_terminal(120, 30)
        await pilot.pause()
        assert not pane.display  # hidden by b, though this width shows it by default
        await pilot.press("b")
        assert pane.display
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert pane.display  # shown by b, though this width hides it by default
        await pilot.resize_terminal(160, 40)
        await pilot.pause()
        assert pane.display and "-wide" in main_screen(app).classes


async def test_new_collection_dialog_creates_it_in_the_registry(snapshot_settings) -> None:
    settings = snapshot_settings()
    app = quiet_app(settings)
    async with app.run_test(size=(120, 30)) as pilot:
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, NewCollectionScreen)
        await pilot.press(*"bad name", "enter")
        assert "letters, digits" in str(app.screen.query_one("#new-note").render())
        await pilot.press(*["backspace"] * 5)                     # "bad" is a good name: the error goes
        assert "enter (in either field) creates it" in str(app.screen.query_one("#new-note").render())
        app.screen.query_one("#new-name").value = ""
        await pilot.press(*"papers", "tab", *"genetics", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        views = main_screen(app).collection_views
        assert [v.name for v in views] == ["papers"]
        assert views[0].topic == "genetics" and views[0].state == "empty"
        assert (settings.data_dir / "collections" / "papers" / "collection.json").is_file()


async def test_ingest_screen_checks_its_inputs(snapshot_settings, tmp_path) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await open_ingest(pilot)
        app.screen.query_one("#ingest-path").value = str(tmp_path / "missing")
        await pilot.press("tab", *"demo", "enter")
        assert "no such file or folder" in str(app.screen.query_one("#ingest-hint").render())
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, IngestScreen)


async def test_sources_show_how_they_went_into_the_answer(snapshot_settings) -> None:
    from ragtui.events import SynthesisStarted

    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        events = finished_session()
        at = next(i for i, e in enumerate(events) if isinstance(e, SynthesisStarted))
        events[at] = SynthesisStarted("chat", (1, 2), windowed=(2,), left_out=(3,))
        await feed(app, events)
        panel = app.query_one(SourcesPanel)
        assert panel.use == {1: "whole", 2: "window", 3: "did not fit"}
        table = app.query_one("#relevant-table", DataTable)
        styles = [str(table.get_cell(str(n), "#").style) for n in (1, 2, 3)]
        assert styles == ["bold reverse green", "bold reverse cyan", "bold strike red"]
        table.focus()
        await pilot.press("down", "down")
        await pilot.pause()
        assert "did not fit the context window" in str(app.query_one("#source-detail").render())


async def test_the_viewer_selects_the_part_the_annotator_read(snapshot_settings) -> None:
    import dataclasses

    from ragtui.workspace import DocumentView
    from tests.tui.scripted import make_sources

    filler = "The voyage went on for weeks along the coast without any event worth noting. " * 30
    passage = "Finches on each island had beaks shaped for the seeds found there."
    source = make_sources()[0]
    source = dataclasses.replace(source, chunk=dataclasses.replace(source.chunk, text=filler + passage + " " + filler))
    before = "Title\n\n"
    document = DocumentView(before + source.chunk.text, len(before), len(before) + len(source.chunk.text))
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await app.push_screen(SourceViewer(source, document, query="why do finches have different beaks",
                                           cursor_blink=False))
        await pilot.pause()
        area = app.screen.query_one(TextArea)
        assert passage in area.selected_text and len(area.selected_text) <= 1200
        assert area.selected_text != source.chunk.text
        assert "selected: the part the annotator read" in str(app.screen.query_one("#viewer-head").render())


async def test_enter_in_the_name_field_creates_the_collection(snapshot_settings) -> None:
    settings = snapshot_settings()
    app = quiet_app(settings)
    async with app.run_test(size=(120, 30)) as pilot:
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("n")
        await pilot.pause()
        await pilot.press(*"notes", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not isinstance(app.screen, NewCollectionScreen)
        assert [v.name for v in main_screen(app).collection_views] == ["notes"]
        assert "notes" in main_screen(app).active


async def test_ctrl_r_reads_the_collections_again(snapshot_settings) -> None:
    from ragtui.library import CollectionRegistry

    settings = snapshot_settings()
    app = quiet_app(settings)
    async with app.run_test(size=(120, 30)) as pilot:
        main = main_screen(app)
        assert main.collection_views == []
        CollectionRegistry(settings).create("later", "made by another process")
        await pilot.press("ctrl+r")          # works from the query bar too: it types nothing
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [v.name for v in main.collection_views] == ["later"]
        assert app.query_one("#query").value == ""


async def test_tab_in_the_ingest_dialog_moves_from_the_path_to_the_collection(snapshot_settings, tmp_path) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await open_ingest(pilot)
        assert app.focused is app.screen.query_one("#ingest-path")
        await pilot.press(*"docs", "tab")
        assert app.focused is app.screen.query_one("#ingest-collection")
        app.focused.value = ""
        await pilot.press(*"notes", "shift+tab")
        assert app.focused is app.screen.query_one("#ingest-path")
        assert app.screen.query_one("#ingest-path").value == "docs"
        assert app.screen.query_one("#ingest-collection").value == "notes"


async def burst(app, pilot, keys: list[str]) -> None:
    """Keys as a terminal delivers a quick typist's (or a paste's) bytes: read at once, queued before any is handled
    (pilot.press waits for each key to be handled before sending the next)."""
    from textual import events

    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(app)
        app._driver.send_message(event)
    await pilot.pause()
    await pilot.pause()


async def test_tab_typed_in_one_burst_moves_to_the_next_field_before_the_keys_after_it(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await open_ingest(pilot)
        await burst(app, pilot, [*"docs", "tab", *"notes"])
        assert app.screen.query_one("#ingest-path").value == "docs"
        assert app.screen.query_one("#ingest-collection").value == "notes"
        await burst(app, pilot, ["shift+tab", *"/x"])        # back in the path field (its text selected on focus)
        assert app.screen.query_one("#ingest-path").value in ("docs/x", "/x")
        assert app.screen.query_one("#ingest-collection").value == "notes"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, NewCollectionScreen)
        await burst(app, pilot, [*"papers", "tab", *"genetics"])
        assert app.screen.query_one("#new-name").value == "papers"
        assert app.screen.query_one("#new-topic").value == "genetics"
