"""A research run's plan before it runs: the user edits, deletes, adds and reorders the sub-questions by keys,
then runs it (enter) or runs nothing (esc). The screen returns the plan as it stands, or None."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static

from ragtui.sanitize import clean, one_line
from ragtui.tui.engine_door import MAX_PART_CHARS, MAX_PARTS
from ragtui.tui.widgets.text_field import TextField

HINT = "enter runs the plan · e edit · a add · d delete · K / J move up / down · esc runs nothing"


class PlanEditor(ModalScreen[list[str] | None]):
    BINDINGS: ClassVar = [
        Binding("escape", "leave", "Cancel"),
        Binding("e", "edit", "Edit"),
        Binding("a", "add", "Add"),
        Binding("d", "delete", "Delete"),
        Binding("K", "move(-1)", "Move up"),
        Binding("J", "move(1)", "Move down"),
    ]

    def __init__(self, question: str, parts: Sequence[str], planned_by: str) -> None:
        super().__init__()
        self.question = question
        self.parts = [one_line(p) for p in parts][:MAX_PARTS]
        self.planned_by = planned_by
        self.editing: int | None = None         # the part being edited; len(parts) while adding one

    def compose(self) -> ComposeResult:
        by = "split from the question as typed" if self.planned_by == "fragments" else \
            f"proposed by {one_line(self.planned_by)}"
        with Vertical(id="plan-box", classes="dialog"):
            yield Static("Research plan", classes="dialog-title")
            yield Static(Text(f"{clean(self.question)}\nSub-questions ({by}):"))
            yield OptionList(id="plan-parts")
            field = TextField(placeholder="a sub-question", id="plan-edit", max_length=MAX_PART_CHARS,
                              select_on_focus=False)
            field.display = False
            yield field
            yield Static(HINT, classes="dialog-hint", id="plan-hint")

    def on_mount(self) -> None:
        self._list()

    @property
    def options(self) -> OptionList:
        return self.query_one("#plan-parts", OptionList)

    @property
    def field(self) -> Input:
        return self.query_one("#plan-edit", Input)

    def _list(self, highlight: int | None = None) -> None:
        options = self.options
        keep = options.highlighted if highlight is None else highlight
        options.clear_options()
        options.add_options([Text(f"{i}. {part}") for i, part in enumerate(self.parts, start=1)])
        if self.parts:
            options.highlighted = min(max(keep or 0, 0), len(self.parts) - 1)
        options.focus()

    def _open_field(self, index: int, text: str) -> None:
        self.editing = index
        field = self.field
        field.value = text
        field.cursor_position = len(text)
        field.display = True
        field.focus()

    def action_edit(self) -> None:
        index = self.options.highlighted
        if index is not None and self.editing is None:
            self._open_field(index, self.parts[index])

    def action_add(self) -> None:
        if self.editing is not None:
            return
        if len(self.parts) >= MAX_PARTS:
            self.notify(f"A plan holds at most {MAX_PARTS} sub-questions.", severity="warning")
            return
        self._open_field(len(self.parts), "")

    def action_delete(self) -> None:
        index = self.options.highlighted
        if index is not None and self.editing is None:
            del self.parts[index]
            self._list(index)

    def action_move(self, step: int) -> None:
        index = self.options.highlighted
        if index is None or self.editing is not None or not 0 <= index + step < len(self.parts):
            return
        self.parts[index], self.parts[index + step] = self.parts[index + step], self.parts[index]
        self._list(index + step)

    def action_leave(self) -> None:
        """esc: stop editing a sub-question, or leave the plan without running it."""
        if self.editing is None:
            self.dismiss(None)
            return
        self.editing = None
        self.field.display = False
        self.options.focus()

    @on(Input.Submitted, "#plan-edit")
    def _edited(self, event: Input.Submitted) -> None:
        event.stop()
        text = one_line(event.value)
        index, self.editing = self.editing, None
        self.field.display = False
        if index is not None and text:
            if index == len(self.parts):
                self.parts.append(text)
            else:
                self.parts[index] = text
        self._list(index)

    @on(OptionList.OptionSelected, "#plan-parts")
    def _run(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if not self.parts:
            self.notify("The plan is empty: add a sub-question (a), or esc.", severity="warning")
            return
        self.dismiss(list(self.parts))
