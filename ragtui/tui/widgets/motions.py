"""Vim motions for the lists, the tables and the source viewer's text, as lazygit and k9s have them: j / k down /
up, g / G first / last, ctrl+d / ctrl+u half a page down / up.

They are bindings of those widgets themselves, so they act only where one has the focus and never where
text is typed (the query bar, a dialog's fields; the viewer's text is read-only). The [keys] table may not
give an action one of these keys (config_keys.TAKEN_KEYS), as the list would take it first.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding
from textual.widgets import DataTable, ListView, TextArea

MOTIONS: list[Binding | tuple[str, str] | tuple[str, str, str]] = [
    Binding("j", "cursor_down", "Down", show=False),
    Binding("k", "cursor_up", "Up", show=False),
    Binding("g", "first", "First", show=False),
    Binding("G", "last", "Last", show=False),
    Binding("ctrl+d", "half_page(1)", "Half a page down", show=False),
    Binding("ctrl+u", "half_page(-1)", "Half a page up", show=False),
]


class MotionTable(DataTable):
    """A row table with the vim motions."""

    BINDINGS: ClassVar = MOTIONS

    def action_first(self) -> None:
        if self.row_count:
            self.move_cursor(row=0)

    def action_last(self) -> None:
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)

    def action_half_page(self, step: int) -> None:
        if not self.row_count:
            return
        header = self.header_height if self.show_header else 0
        rows = max(1, (self.scrollable_content_region.height - header) // 2 // max(1, self._row_height()))
        self.move_cursor(row=max(0, min(self.row_count - 1, self.cursor_row + step * rows)))

    def _row_height(self) -> int:
        """The height of the cursor's row (rows of one table share a height here)."""
        return self.ordered_rows[self.cursor_row].height if self.row_count else 1


class MotionList(ListView):
    """A list with the vim motions."""

    BINDINGS: ClassVar = MOTIONS

    def action_first(self) -> None:
        if len(self):
            self.index = 0

    def action_last(self) -> None:
        if len(self):
            self.index = len(self) - 1

    def action_half_page(self, step: int) -> None:
        if len(self):
            rows = max(1, self.scrollable_content_region.height // 2)
            self.index = max(0, min(len(self) - 1, (self.index or 0) + step * rows))


class MotionReader(TextArea):
    """A read-only text with the vim motions (they replace a TextArea's ctrl+d / ctrl+u, which delete)."""

    BINDINGS: ClassVar = MOTIONS

    def action_first(self) -> None:
        self.move_cursor((0, 0))

    def action_last(self) -> None:
        self.move_cursor(self.document.end)

    def action_half_page(self, step: int) -> None:
        self.move_cursor_relative(rows=step * max(1, self.scrollable_content_region.height // 2))
