"""The source viewer: the chunk inside its document text, at its page, its most relevant part selected.

The selection is the chunk's best window for the session's query
(`llm.window.best_window`): what the annotator read and what packing sends
when the whole chunk does not fit. A chunk no longer than the window is
selected whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static, TextArea
from textual.widgets.text_area import Selection

from ragtui.llm.window import WINDOW_CHARS, best_window
from ragtui.model import SessionSource
from ragtui.tui.messages import CopyRequested
from ragtui.workspace import DocumentView


def offset_to_location(text: str, offset: int) -> tuple[int, int]:
    """A character offset as TextArea's (row, column)."""
    before = text[:offset]
    row = before.count("\n")
    return row, offset - (before.rfind("\n") + 1)


def describe(source: SessionSource, window: tuple[int, int] | None = None) -> Text:
    meta = source.chunk.meta
    text = Text()
    text.append(f"[{source.number}] {meta.collection}/{meta.source}", style="bold")
    if meta.page:
        text.append(f"  page {meta.page}", style="bold cyan")
    if meta.heading:
        text.append(f"  {meta.heading}", style="italic")
    text.append(f"\nrel {source.rel_score:.2f} · score {source.score:.3f} · found by {'+'.join(source.legs) or '-'}"
                + (f" · reranked {source.rerank_score:.3f}" if source.rerank_score is not None else "")
                + f" · {source.state.value}", style="dim")
    if source.override.value:
        text.append(f" ({source.override.value})", style="dim")
    if source.error:
        text.append(f"\nannotation failed: {source.error}", style="red")
    elif source.annotation:
        text.append("\n" + " ".join(source.annotation.split()), style="italic")
    if window is not None:
        text.append(f"\nselected: the part the annotator read, chars {window[0]:,}-{window[1]:,} of "
                    f"{len(source.chunk.text):,} (the most relevant to the query)", style="dim")
    return text


class SourceViewer(ModalScreen[None]):
    BINDINGS: ClassVar = [
        Binding("escape,q", "dismiss", "Close"),
        Binding("y", "copy", "Copy chunk"),
        Binding("w", "details", "Why this source"),
    ]

    def __init__(self, source: SessionSource, document: DocumentView, *, query: str = "",
                 cursor_blink: bool = True, details: Sequence[str] = ()) -> None:
        """`query`: what the annotator read the source against; `details`: the engine's explanation of how
        the source was found (w shows it)."""
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

    def compose(self) -> ComposeResult:
        with Vertical(id="viewer-box"):
            yield Static(describe(self.source, self.window), id="viewer-head")
            if self.document.note:
                yield Static(Text(self.document.note, style="yellow"), id="viewer-note")
            yield TextArea(self.document.text, read_only=True, soft_wrap=True, show_line_numbers=False,
                           id="viewer-text")
        yield Footer()

    def on_mount(self) -> None:
        area = self.query_one(TextArea)
        area.cursor_blink = self.cursor_blink
        text = self.document.text
        first, last = self.document.start, self.document.end
        if self.window is not None:
            first, last = first + self.window[0], first + self.window[1]
        start = offset_to_location(text, first)
        end = offset_to_location(text, last)
        area.selection = Selection(end, start)  # cursor at the chunk's start, so that is what scrolls into view
        area.focus()
        self.call_after_refresh(area.scroll_cursor_visible, center=True, animate=False)

    def action_details(self) -> None:
        from ragtui.tui.screens.details import DetailsScreen

        if not self.details:
            self.notify("No retrieval details for this source.", severity="warning")
            return
        self.app.push_screen(DetailsScreen(f"Why [{self.source.number}] {self.source.chunk.label}", self.details))

    def action_copy(self) -> None:
        self.post_message(CopyRequested(self.source.chunk.text, f"source [{self.source.number}]"))
