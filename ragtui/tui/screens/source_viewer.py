"""The source viewer: the chunk inside its document text, at its page, its most relevant part selected;
built for reading on.

The selection is the chunk's best window for the session's query
(`llm.window.best_window`): what the annotator read and what packing sends
when the whole chunk does not fit. A chunk no longer than the window is
selected whole. n / p move to the next / previous chunk of the same document,
] / [ to the next / previous page, / searches the document (enter finds the next
match). PDF text is reflowed (soft line breaks inside paragraphs joined) without
moving any offset.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static, TextArea
from textual.widgets.text_area import Selection

from ragtui.model.conversation import SessionSource
from ragtui.sanitize import clean, one_line, same_length
from ragtui.textfit import reflow
from ragtui.tui.engine_door import WINDOW_CHARS, DocumentView, best_window
from ragtui.tui.messages import CopyRequested
from ragtui.tui.widgets.motions import MotionReader
from ragtui.tui.widgets.sources import MISQUOTE_NOTE


def offset_to_location(text: str, offset: int) -> tuple[int, int]:
    """A character offset as TextArea's (row, column)."""
    before = text[:offset]
    row = before.count("\n")
    return row, offset - (before.rfind("\n") + 1)


def location_to_offset(text: str, location: tuple[int, int]) -> int:
    row, column = location
    start = 0
    for _ in range(row):
        start = text.index("\n", start) + 1
    return start + column


def describe(source: SessionSource, window: tuple[int, int] | None = None) -> Text:
    meta = source.chunk.meta
    text = Text()
    text.append(f"[{source.number}] {one_line(meta.collection)}/{one_line(meta.source)}", style="bold")
    if meta.page:
        pages = one_line(meta.pages)
        text.append(f"  pages {pages}" if pages != one_line(meta.page) else f"  page {pages}", style="bold cyan")
        if source.quote_page:
            text.append(f" (the quote: page {one_line(source.quote_page)})", style="cyan")
    if meta.heading:
        text.append(f"  {one_line(meta.heading)}", style="italic")
    text.append(f"\nrel {source.rel_score:.2f} · score {source.score:.3f} · found by {'+'.join(source.legs) or '-'}"
                + (f" · reranked {source.rerank_score:.3f}" if source.rerank_score is not None else "")
                + f" · {source.state.value}", style="dim")
    if source.override.value:
        text.append(f" ({source.override.value})", style="dim")
    if source.error:
        text.append(f"\nannotation failed: {clean(source.error)}", style="red")
    elif source.annotation:
        note = MISQUOTE_NOTE if source.misquoted else "(no quote from this source) " if source.quoteless else ""
        text.append("\n" + note + " ".join(clean(source.annotation).split()), style="italic")
    if window is not None:
        text.append(f"\nselected: the part the annotator read, chars {window[0]:,}-{window[1]:,} of "
                    f"{len(source.chunk.text):,} (the most relevant to the query)", style="dim")
    return text


class SourceViewer(ModalScreen[None]):
    BINDINGS: ClassVar = [
        Binding("escape,q", "close", "Close"),
        Binding("y", "copy", "Copy chunk"),
        Binding("w", "details", "Why this source"),
        Binding("n", "chunk(1)", "Next chunk"),
        Binding("p", "chunk(-1)", "Prev chunk"),
        Binding("right_square_bracket", "page(1)", "Next page", key_display="]"),
        Binding("left_square_bracket", "page(-1)", "Prev page", key_display="["),
        Binding("slash", "search", "Search", key_display="/"),
        # the same entry of the [keys] table as the main screen's (tui/keymap.py): Textual's keymap goes by id
        Binding("v", "page_view", "Page", id="page_view"),
    ]

    def __init__(self, source: SessionSource, document: DocumentView, *, query: str = "",
                 cursor_blink: bool = True, details: Sequence[str] = (),
                 page_view: Callable[[SessionSource], object] | None = None) -> None:
        """`query`: what the annotator read the source against; `details`: the engine's explanation of how
        the source was found (w shows it); `page_view` opens the PDF page the source lies on (v)."""
        super().__init__()
        self.source = source
        self.document = document
        self.cursor_blink = cursor_blink
        text = source.chunk.text
        start, end = best_window(text, query, WINDOW_CHARS) if query else (0, len(text))
        # a part only when it is one, and only when the document shows the chunk's exact text
        exact = document.text[document.start:document.end] == text
        self.window = (start, end) if exact and (start, end) != (0, len(text)) else None
        self.details = list(details)
        self.page_view = page_view
        # inert without moving an offset, so the chunk's offsets still select it
        self.text = same_length(reflow(document.text) if source.chunk.meta.format == "pdf" else document.text)
        self.chunks = list(document.chunks) or [(document.start, document.end)]
        self.at = self._chunk_at(document.start)     # which chunk is selected

    def compose(self) -> ComposeResult:
        with Vertical(id="viewer-box"):
            yield Static(describe(self.source, self.window), id="viewer-head")
            if self.document.note:
                yield Static(Text(clean(self.document.note), style="yellow"), id="viewer-note")
            yield Static("", id="viewer-where")
            yield MotionReader(self.text, read_only=True, soft_wrap=True, show_line_numbers=False, id="viewer-text")
            yield Input(placeholder="search this document: enter finds the next match, esc goes back",
                        id="viewer-search")
        yield Footer()

    def on_mount(self) -> None:
        area = self.query_one(TextArea)
        area.cursor_blink = self.cursor_blink
        self.query_one("#viewer-search", Input).display = False
        first, last = self.document.start, self.document.end
        if self.window is not None:
            first, last = first + self.window[0], first + self.window[1]
        self._select(first, last)
        area.focus()

    # --- where we are ----------------------------------------------------------------

    def _chunk_at(self, offset: int) -> int:
        starts = [start for start, _ in self.chunks]
        return max(0, bisect.bisect_right(starts, offset) - 1)

    def _page_at(self, offset: int) -> int:
        starts = [start for start, _ in self.document.pages]
        return bisect.bisect_right(starts, offset) - 1

    def _select(self, start: int, end: int) -> None:
        """Select text[start:end] with the cursor at its start, scrolled to the middle of the view."""
        area = self.query_one(TextArea)
        area.selection = Selection(offset_to_location(self.text, end), offset_to_location(self.text, start))
        self.call_after_refresh(area.scroll_cursor_visible, center=True, animate=False)
        self._where(start)

    def _where(self, offset: int) -> None:
        parts = [f"chunk {self.at + 1} of {len(self.chunks)} (n / p)"]
        page = self._page_at(offset)
        if page >= 0:
            parts.append(f"page {one_line(self.document.pages[page][1])} of {len(self.document.pages)} (] / [)")
        parts.append("/ searches")
        self.query_one("#viewer-where", Static).update(Text(" · ".join(parts), style="dim"))

    # --- moving ---------------------------------------------------------------------

    def action_chunk(self, step: int) -> None:
        if not 0 <= self.at + step < len(self.chunks):
            self.notify("No more chunks that way in this document.")
            return
        self.at += step
        self._select(*self.chunks[self.at])

    def action_page(self, step: int) -> None:
        pages = self.document.pages
        if not pages:
            self.notify("This document has no pages.")
            return
        cursor = location_to_offset(self.text, self.query_one(TextArea).cursor_location)
        page = self._page_at(cursor) + step
        if not 0 <= page < len(pages):
            self.notify("No more pages that way.")
            return
        start = pages[page][0]
        self.at = self._chunk_at(start)
        area = self.query_one(TextArea)
        area.selection = Selection.cursor(offset_to_location(self.text, start))
        self.call_after_refresh(area.scroll_cursor_visible, center=False, animate=False)
        self._where(start)

    # --- searching ------------------------------------------------------------------

    def action_search(self) -> None:
        search = self.query_one("#viewer-search", Input)
        search.display = True
        search.focus()

    @on(Input.Submitted, "#viewer-search")
    def _find(self, event: Input.Submitted) -> None:
        """Select the next match (case-insensitive) after the selection, wrapping round to the top."""
        needle = event.value.strip().casefold()
        if not needle:
            return
        area = self.query_one(TextArea)
        after = location_to_offset(self.text, area.selection.end)
        haystack = self.text.casefold()
        found = haystack.find(needle, after + 1)
        if found < 0:
            found = haystack.find(needle)
        if found < 0:
            self.notify(f"Not in this document: {event.value.strip()}", severity="warning")
            return
        self.at = self._chunk_at(found)
        area.selection = Selection(offset_to_location(self.text, found),
                                   offset_to_location(self.text, found + len(needle)))
        self.call_after_refresh(area.scroll_cursor_visible, center=True, animate=False)
        self._where(found)

    def action_close(self) -> None:
        """esc leaves the search box first, then closes the viewer."""
        search = self.query_one("#viewer-search", Input)
        if search.has_focus:
            search.display = False
            self.query_one(TextArea).focus()
            return
        self.dismiss()

    def action_details(self) -> None:
        from ragtui.tui.screens.details import DetailsScreen

        if not self.details:
            self.notify("No retrieval details for this source.", severity="warning")
            return
        self.app.push_screen(DetailsScreen(f"Why [{self.source.number}] {self.source.chunk.label}", self.details))

    def action_page_view(self) -> None:
        if self.page_view is None:
            self.notify("No page view here.", severity="warning")
            return
        self.page_view(self.source)

    def action_copy(self) -> None:
        """Copy the chunk shown (as extracted, before reflowing)."""
        start, end = self.chunks[self.at]
        self.post_message(CopyRequested(self.document.text[start:end],
                                        f"chunk {self.at + 1} of {self.source.chunk.meta.source}"))
