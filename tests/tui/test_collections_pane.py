"""The collections pane follows the collections on disk: a damaged one is a "damaged" row with its reason beside
the healthy ones, chunks another process ingested show up without ctrl+r (the pane polls a cheap stamp), and a
collection the TUI itself ingests into reads "ingesting" from the ingest's start."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path

from textual.widgets import Label, ListView

from ragtui.config import Settings
from ragtui.model.collection import CollectionInfo
from ragtui.tui.widgets.collections import CollectionItem, CollectionsPane
from tests.cli_run import cli
from tests.fake_ollama import FakeOllama
from tests.tui.conftest import main_screen, quiet_app
from tests.watch_process import WatchProcess


def _ingest(tmp_path: Path, fake_ollama: FakeOllama, folder: Path, name: str) -> None:
    done = cli(tmp_path, fake_ollama.url, "ingest", str(folder), "-c", name)
    assert done.returncode == 0, done.stderr


def one_file_folder(tmp_path: Path) -> Path:
    """tmp_path/docs, holding a.txt (one chunk)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The float valve refills the cistern after each flush. " * 4)
    return docs


async def polled(app, pilot) -> None:   # type: ignore[no-untyped-def]
    """Run the main screen's collections poll (what its timer runs) and wait until what it found is shown."""
    main_screen(app).poll_collections()
    await app.workers.wait_for_complete()
    await pilot.pause()


def _rows(app) -> dict[str, str]:   # type: ignore[no-untyped-def]
    """Each drawn row's text by collection name (a row just mounted has no label yet and is left out)."""
    return {item.view.name: str(labels.first().render()) for item in app.query(CollectionItem)
            if (labels := item.query(Label))}


async def test_the_pane_lists_a_damaged_collection_with_its_reason_beside_the_healthy_one(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    docs = one_file_folder(tmp_path)
    for name in ("good", "bad"):
        _ingest(tmp_path, fake_ollama, docs, name)
    [toc] = (tmp_path / "data" / "collections" / "bad" / "whoosh").glob("*.toc")
    toc.write_bytes(b"garbage" * 10)
    app = quiet_app(make_settings())
    async with app.run_test(size=(160, 40)) as pilot:
        main = main_screen(app)
        main.load_collections()
        await app.workers.wait_for_complete()
        await pilot.pause()
        views = {v.name: v for v in main.collection_views}
        assert views["good"].state == "ready" and views["good"].chunks == 1
        assert views["bad"].state == "damaged" and "whoosh" in views["bad"].damaged
        assert main.active == {"good"}                   # a damaged collection is not searched by default
        row = _rows(app)["bad"]
        assert "damaged" in row and "whoosh" in row


async def test_chunks_ingested_by_another_process_reach_the_pane_at_its_next_poll(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    docs = one_file_folder(tmp_path)
    _ingest(tmp_path, fake_ollama, docs, "c")
    app = quiet_app(make_settings())
    async with app.run_test(size=(160, 40)) as pilot:
        main = main_screen(app)
        await polled(app, pilot)
        assert [v.chunks for v in main.collection_views] == [1]
        (docs / "b.txt").write_text("A centrifugal pump spins an impeller inside its casing. " * 4)
        (docs / "c.txt").write_text("Clay tiles on a pitched roof shed rain into the gutters. " * 4)
        _ingest(tmp_path, fake_ollama, docs, "c")        # another process
        await polled(app, pilot)
        assert [v.chunks for v in main.collection_views] == [3]
        assert "3 chunks" in _rows(app)["c"]


async def test_a_collection_activated_as_the_pane_reloads_is_shown_active(snapshot_settings) -> None:
    """The demo's first run: the pane's poll had just shown the collection's new state (new rows, not drawn yet)
    when the ingest's end activated the collection. Marking those rows active looked up a label they did not have
    yet, and the error stopped the app at the end of a finished ingest (the demo's pilot then waited for ever)."""
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        main = main_screen(app)
        main.show_collections([CollectionInfo("demo", "", "", (), 0, "ingesting")])    # no chunks: not active yet
        await pilot.pause()
        main.show_collections([CollectionInfo("demo", "", "", (), 12, "ready")])       # the poll's reload
        main.active |= {"demo"}        # as the ingest's end does (ingest_ended), before those rows are drawn
        await pilot.pause()
        assert app.return_code is None
        assert _rows(app)["demo"].startswith("[x] demo")


async def test_a_collection_the_tui_ingests_into_shows_as_ingesting_while_it_runs(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    """No poll runs here (the quiet app starts none): only the ingest's own start can tell the pane."""
    docs = one_file_folder(tmp_path)
    _ingest(tmp_path, fake_ollama, docs, "c")
    (docs / "b.txt").write_text("A centrifugal pump spins an impeller inside its casing. " * 4)
    fake_ollama.embed_gate = threading.Event()           # embedding waits: the ingest is caught mid-way
    app = quiet_app(make_settings())
    async with app.run_test(size=(160, 40)) as pilot:
        main = main_screen(app)
        main.load_collections()
        await app.workers.wait_for_complete()
        assert [v.state for v in main.collection_views] == ["ready"]
        main.action_ingest(docs, "c")
        try:
            async with asyncio.timeout(60):
                while not (fake_ollama.calls("/api/embed") and "ingesting" in _rows(app).get("c", "")):
                    await pilot.pause(0.05)
            assert [v.state for v in main.collection_views] == ["ingesting"]
        finally:
            fake_ollama.embed_gate.set()
        async with asyncio.timeout(60):
            while [v.state for v in main.collection_views] != ["ready"]:
                await pilot.pause(0.05)
        assert [v.chunks for v in main.collection_views] == [2]


async def test_a_collections_load_asked_for_as_the_app_quits_ends_quietly(
        make_settings: Callable[..., Settings]) -> None:
    """An ingest's start or end asks for a reload; as the app quits, the screen's widgets are already gone."""
    app = quiet_app(make_settings())
    async with app.run_test(size=(160, 40)) as pilot:
        main = main_screen(app)
        await main.query_one(CollectionsPane).remove()
        main.load_collections()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.return_code is None


async def test_the_pane_removes_a_file_and_rebuilds_the_keyword_index_of_the_highlighted_collection(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    docs = one_file_folder(tmp_path)
    (docs / "b.txt").write_text("A centrifugal pump spins an impeller inside its casing. " * 4)
    _ingest(tmp_path, fake_ollama, docs, "c")
    app = quiet_app(make_settings())
    async with app.run_test(size=(160, 40)) as pilot:
        main = main_screen(app)
        main.load_collections()
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.query_one(CollectionsPane).query_one(ListView).focus()

        async def said_after(*keys: str) -> list[str]:
            await pilot.press(keys[0])
            await pilot.pause()
            await pilot.press(*keys[1:])
            await app.workers.wait_for_complete()
            await pilot.pause()
            return [str(n.message) for n in app._notifications]

        refused = await said_after("d", *"nothing.txt", "enter")      # a file it does not hold: nothing removed
        assert any(s.startswith("Nothing removed from c: not in collection c: nothing.txt") for s in refused), refused
        assert "Removed 1 file(s) from c: a.txt" in await said_after("d", *"a.txt", "enter")
        assert "Rebuilt the keyword index of c: 1 chunks." in await said_after("K")
    listed = json.loads(cli(tmp_path, fake_ollama.url, "collections", "list", "--json").stdout)
    assert (listed[0]["files"], listed[0]["chunks"]) == (1, 1)


async def test_a_collection_another_process_watches_is_marked_watched_until_that_watch_stops(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    """`ragtui ingest --watch` in a process of its own holds the collection's watch lock: the pane's poll marks the
    row, and drops the mark once Ctrl-C has stopped the watch."""
    docs = one_file_folder(tmp_path)
    watch = WatchProcess(tmp_path, fake_ollama.url, docs, "c")
    try:
        watch.wait_for(lambda line: line.startswith("watch: watching"), 120)
        app = quiet_app(make_settings())
        async with app.run_test(size=(160, 40)) as pilot:
            main = main_screen(app)
            await polled(app, pilot)
            assert [v.watched for v in main.collection_views] == [True]
            assert "1 chunks · watched" in _rows(app)["c"]
            status, _ = await asyncio.to_thread(watch.interrupt)
            assert status == 0
            await polled(app, pilot)
            assert [v.watched for v in main.collection_views] == [False]
            assert "watched" not in _rows(app)["c"]
    finally:
        watch.kill()
