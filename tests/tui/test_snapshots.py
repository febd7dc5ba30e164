"""Snapshots of every screen and state worth looking at; each states its own settings and terminal size.

Determinism: a fixed Ollama host (the probe is off, its result is fed in), no
temp paths or times on screen, cursor blink off, nothing running when taken.
"""

from __future__ import annotations

import dataclasses

from ragtui.events import FileSkipped, IngestProgress, Notice, SynthesisToken
from ragtui.tui.screens.help import HelpScreen
from ragtui.tui.screens.ingest import IngestScreen
from ragtui.tui.screens.source_viewer import SourceViewer
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.workspace import DocumentView
from tests.tui.conftest import feed, post_events, quiet_app
from tests.tui.scripted import finished_session, make_sources


async def _finished(pilot) -> None:
    await feed(pilot.app, finished_session())
    pilot.app.query_one(SourcesPanel).active_table.focus()
    await pilot.pause()


def test_main_finished_80x24(snap_compare, snapshot_settings) -> None:
    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(80, 24), run_before=_finished)


def test_main_finished_160x48(snap_compare, snapshot_settings) -> None:
    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(160, 48), run_before=_finished)


def test_filtered_tab(snap_compare, snapshot_settings) -> None:
    async def run_before(pilot) -> None:
        await _finished(pilot)
        pilot.app.query_one("#source-tabs").active = "filtered"
        pilot.app.query_one("#filtered-table").focus()
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(100, 30), run_before=run_before)


def test_source_viewer(snap_compare, snapshot_settings) -> None:
    source = dataclasses.replace(make_sources()[0], annotation='"Natural selection acts solely by the preservation '
                                 'of profitable variations." On point.')
    before = "\n".join(f"Line {i} of the page before the chunk." for i in range(1, 9)) + "\n"
    text = before + source.chunk.text + "\nAnd the text after it goes on."
    document = DocumentView(text, len(before), len(before) + len(source.chunk.text))

    async def run_before(pilot) -> None:
        await _finished(pilot)
        await pilot.app.push_screen(SourceViewer(source, document, cursor_blink=False))
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(80, 24), run_before=run_before)


def test_help_screen(snap_compare, snapshot_settings) -> None:
    async def run_before(pilot) -> None:
        await pilot.app.push_screen(HelpScreen())
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(80, 30), run_before=run_before)


def test_ingest_mid_progress(snap_compare, snapshot_settings) -> None:
    async def run_before(pilot) -> None:
        screen = IngestScreen(pilot.app.workspace, "demo", "~/papers", cursor_blink=False)
        await pilot.app.push_screen(screen)
        screen.apply(FileSkipped("scans/blank.pdf", "no text layer and OCR is off (ingest.tesseract_bin)"))
        screen.apply(IngestProgress(files_done=7, files_total=20, chunks=312, embedded=280,
                                    embed_rate=41.5, eta_s=95.0, current="notes/selection.md"))
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(80, 24), run_before=run_before)


def test_ollama_down(snap_compare, snapshot_settings) -> None:
    """The real start-up probe against a closed loopback port; collections from an empty data dir."""
    from ragtui.tui.app import RagtuiApp

    app = RagtuiApp(snapshot_settings("ollama.host=http://127.0.0.1:9"), cursor_blink=False)

    async def run_before(pilot) -> None:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_theme_light(snap_compare, snapshot_settings) -> None:
    app = quiet_app(snapshot_settings("ui.theme=ragtui-light"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=_finished)


def test_theme_basic(snap_compare, snapshot_settings) -> None:
    app = quiet_app(snapshot_settings("ui.theme=ragtui-basic"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=_finished)


def test_answer_streaming_80x24(snap_compare, snapshot_settings) -> None:
    """The query bar keeps the focus; the streaming answer has the room, the sources a few rows."""
    async def run_before(pilot) -> None:
        events = finished_session()
        cut = next(i for i, e in enumerate(events) if isinstance(e, SynthesisToken)) + 12
        await feed(pilot.app, events[:cut])
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(80, 24), run_before=run_before)


def test_notice_80x24(snap_compare, snapshot_settings) -> None:
    """A long notice: one line over the query bar's border, the answer uncovered; ! shows it whole."""
    async def run_before(pilot) -> None:
        await _finished(pilot)
        await post_events(pilot.app, [Notice("warning", "2 relevant source(s) did not fit the context window "
                                                        "(4096 tokens, llm.max_tokens 1024): [4] [5]")])
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(80, 24), run_before=run_before)


def test_wide_detail_with_chunk_text_200x50(snap_compare, snapshot_settings) -> None:
    """200x50: two-line annotations, the highlighted source's chunk with the query's words marked."""
    async def run_before(pilot) -> None:
        pilot.app.query_one(SourcesPanel).query_words = ("natural", "selection", "variations")
        await _finished(pilot)

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(200, 50), run_before=run_before)


def test_embedding_in_progress_notice_80x24(snap_compare, snapshot_settings) -> None:
    """The notice a query gives while the collection's ingest is still embedding: what is true (how far it is,
    what finds the rest), never 're-run the ingest'. Its text is the engine's (tests/retrieve pin it)."""
    async def run_before(pilot) -> None:
        await _finished(pilot)
        await post_events(pilot.app, [Notice("info", "Collection demo: embedding in progress: 768 of 1,539; the "
                                                     "chunks not embedded yet are found by keyword matches only.")])
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(quiet_app(snapshot_settings()), terminal_size=(80, 24), run_before=run_before)
