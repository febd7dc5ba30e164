"""The new-collection dialog: a name (checked as you type) and an optional topic."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.validation import Function
from textual.widgets import Input, Static

from ragtui.tui.engine_door import NAME_RULE, CollectionError, validate_collection_name
from ragtui.tui.keymap import FIELD_TABS

HINT = "enter (in either field) creates it · tab: topic · esc cancels"


def name_problem(name: str, existing: set[str]) -> str:
    """Why a collection name cannot be used, or "" when it can."""
    try:
        validate_collection_name(name)
    except CollectionError:
        return NAME_RULE
    if name in existing:
        return f"a collection named {name!r} already exists"
    return ""


class NewCollectionScreen(ModalScreen[tuple[str, str] | None]):
    BINDINGS: ClassVar = [*FIELD_TABS, Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, existing: set[str]) -> None:
        super().__init__()
        self.existing = existing

    def compose(self) -> ComposeResult:
        with Vertical(id="new-collection-box", classes="dialog"):
            yield Static("New collection", classes="dialog-title")
            yield Input(placeholder="name, e.g. papers", id="new-name",
                        validators=[Function(lambda name: not name_problem(name, set()))])
            yield Input(placeholder="topic (optional): what is in it", id="new-topic")
            yield Static(HINT, id="new-note", classes="dialog-hint")

    @on(Input.Submitted)
    def _submit(self) -> None:
        """enter in either field creates the collection (the topic is optional), once the name is good."""
        name = self.query_one("#new-name", Input).value.strip()
        problem = name_problem(name, self.existing)
        if problem:
            self.query_one("#new-note", Static).update(Text(f"Name: {problem}", style="yellow"))
            self.query_one("#new-name", Input).focus()
            return
        self.dismiss((name, self.query_one("#new-topic", Input).value.strip()))

    @on(Input.Changed, "#new-name")
    def _check(self, event: Input.Changed) -> None:
        """The error goes as soon as the name is fixed."""
        problem = name_problem(event.value.strip(), self.existing) if event.value.strip() else ""
        self.query_one("#new-note", Static).update(Text(f"Name: {problem}", style="yellow") if problem else HINT)
