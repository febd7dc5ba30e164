"""The source viewer for reading: chunk by chunk, page by page, search, and PDF text reflowed."""

from __future__ import annotations

import dataclasses

from textual.widgets import TextArea

from ragtui.model import Chunk
from ragtui.textfit import reflow
from ragtui.tui.screens.source_viewer import SourceViewer
from ragtui.workspace import DocumentView
from tests.tui.conftest import quiet_app
from tests.tui.scripted import make_sources

PAGES = ["Natural selection acts solely by the preservation\nof profitable variations in the struggle\nfor life.",
         "Breeders select small differences\nover many generations.\n\nChapter 2\nGeology.",
         "The record is imperfect: intermediate\nvarieties are rarely preserved."]


def pdf_document() -> tuple[str, DocumentView]:
    text, pages, chunks = "", [], []
    for number, page in enumerate(PAGES, start=1):
        pages.append((len(text), str(number)))
        chunks.append((len(text), len(text) + len(page)))
        text += page + "\n\n"
    return text, DocumentView(text, chunks[1][0], chunks[1][1], chunks=tuple(chunks), pages=tuple(pages))


def test_reflow_joins_soft_breaks_only_and_keeps_offsets() -> None:
    text = "\n\n".join(PAGES)
    flowed = reflow(text)
    assert len(flowed) == len(text)
    assert "preservation of profitable variations in the struggle for life." in flowed
    assert "differences over many generations.\n\nChapter 2\nGeology." in flowed   # paragraphs, headings kept


async def test_n_p_brackets_and_search_move_through_the_document(snapshot_settings) -> None:
    text, document = pdf_document()
    source = make_sources()[0]
    start, end = document.start, document.end
    meta = dataclasses.replace(source.chunk.meta, char_start=start, char_end=end, format="pdf")
    source = dataclasses.replace(source, chunk=Chunk(source.chunk.id, text[start:end], meta))
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        viewer = SourceViewer(source, document, cursor_blink=False)
        await app.push_screen(viewer)
        await pilot.pause()
        area = viewer.query_one(TextArea)
        assert area.selected_text == reflow(PAGES[1])
        assert "chunk 2 of 3" in str(viewer.query_one("#viewer-where").render())
        await pilot.press("n")
        assert area.selected_text == reflow(PAGES[2]) and viewer.at == 2
        await pilot.press("p", "p")
        assert area.selected_text == reflow(PAGES[0])
        assert "preservation of profitable" in area.text                 # reflowed
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert "page 3 of 3" in str(viewer.query_one("#viewer-where").render())
        await pilot.press("left_square_bracket")
        assert "page 2 of 3" in str(viewer.query_one("#viewer-where").render())
        await pilot.press("slash", *"GEOLOGY", "enter")
        assert area.selected_text == "Geology" and viewer.at == 1
        await pilot.press("escape")                                      # leaves the search box
        assert isinstance(app.screen, SourceViewer) and area.has_focus
        await pilot.press("y")
        assert app.clipboard == PAGES[1]                                 # the chunk as extracted
        await pilot.press("escape")
        assert not isinstance(app.screen, SourceViewer)
