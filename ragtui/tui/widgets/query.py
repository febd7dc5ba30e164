"""The query bar: an Input that recalls earlier queries with up/down, like a shell."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import events
from textual.binding import Binding
from textual.content import Content

from ragtui.sanitize import one_line
from ragtui.tui.widgets.text_field import TextField


class QueryInput(TextField):
    BINDINGS: ClassVar = [
        Binding("up", "recall(-1)", "Older query", show=False),
        Binding("down", "recall(1)", "Newer query", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(placeholder="Ask a question and press enter  ( / to come back here )", **kwargs)
        self.past: list[str] = []
        self._recall_at = 0
        self._habit: frozenset[str] = frozenset()   # keys the next key press is eaten for (expect_habit)

    def expect_habit(self, keys: tuple[str, ...]) -> None:
        """Eat the next key press if it is one of `keys` (the keys that focus this bar): after a key that put the
        focus here itself (N), the `/` pressed out of habit must not start the question."""
        self._habit = frozenset(keys)

    async def _on_key(self, event: events.Key) -> None:
        """Runs before Input's own handler (Textual walks the classes down), which prevent_default skips."""
        habit, self._habit = self._habit, frozenset()
        if event.key in habit:
            event.stop()
            event.prevent_default()

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
