"""The filter field of a list (the sources, the history): the list shows only the rows holding every word typed,
as it is typed; enter goes back to the list with the filter kept, esc clears it and goes back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from textual.binding import Binding
from textual.message import Message

from ragtui.tui.widgets.text_field import TextField


def filter_words(text: str) -> tuple[str, ...]:
    return tuple(text.casefold().split())


def matches(words: tuple[str, ...], *fields: str) -> bool:
    """Whether every word occurs in one of the fields (case folded); no words match everything."""
    if not words:
        return True
    haystack = "\n".join(fields).casefold()
    return all(word in haystack for word in words)


class FilterBar(TextField):
    """Hidden until `open()`; its value's words are the filter (`words`)."""

    BINDINGS: ClassVar = [Binding("escape", "clear", "Clear the filter", show=False)]

    @dataclass
    class Closed(Message):
        """The filter was cleared (esc) or kept (enter): the list takes the focus back."""

        bar: FilterBar

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(placeholder="filter: type words to keep the rows holding them · enter keeps · esc clears",
                         **kwargs)
        self.display = False

    @property
    def words(self) -> tuple[str, ...]:
        return filter_words(self.value) if self.display else ()

    def open(self) -> None:
        """Show the field with the focus in it at once, so that the keys typed right after the key that opened it
        are typed here (keymap.py, the note above FIELD_TABS)."""
        self.display = True
        self.screen.set_focus(self)

    def action_clear(self) -> None:
        self.value = ""
        self.display = False
        self.post_message(self.Closed(self))

    async def action_submit(self) -> None:
        if not self.value.strip():
            self.display = False
        self.post_message(self.Closed(self))
