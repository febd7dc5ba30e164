"""The query bar: an Input that recalls earlier queries with up/down, like a shell."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.binding import Binding
from textual.content import Content
from textual.widgets import Input

from ragtui.sanitize import one_line


class QueryInput(Input):
    BINDINGS: ClassVar = [
        Binding("up", "recall(-1)", "Older query", show=False),
        Binding("down", "recall(1)", "Newer query", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(placeholder="Ask a question and press enter  ( / to come back here )", **kwargs)
        self.past: list[str] = []
        self._recall_at = 0

    def show_chips(self, chips: list[str]) -> None:
        """The active search filter, one chip per value, in the bar's bottom border ("" hides them)."""
        self.border_subtitle = Content.assemble(*(piece for chip in chips
                                                  for piece in ((f" {one_line(chip)} ", "reverse"), " ")))

    def remember(self, query: str) -> None:
        """Add a submitted query to the recall list (no immediate repeats) and reset the recall position."""
        if query and (not self.past or self.past[-1] != query):
            self.past.append(query)
        self._recall_at = len(self.past)

    def action_recall(self, step: int) -> None:
        if not self.past:
            return
        self._recall_at = max(0, min(len(self.past), self._recall_at + step))
        self.value = self.past[self._recall_at] if self._recall_at < len(self.past) else ""
        self.cursor_position = len(self.value)
