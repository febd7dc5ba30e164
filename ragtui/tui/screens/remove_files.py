"""The remove-files dialog of the collections pane: one file or folder to drop from a collection's stores."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ragtui.sanitize import one_line

HINT = "a file or folder as the collection lists it, or a path on disk · enter removes it · esc cancels"


class RemoveFilesScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, collection: str) -> None:
        super().__init__()
        self.collection = collection

    def compose(self) -> ComposeResult:
        with Vertical(id="remove-files-box", classes="dialog"):
            yield Static(Text(f"Remove files from {one_line(self.collection)}"), classes="dialog-title")
            yield Input(placeholder="e.g. notes/old.pdf or notes/", id="remove-path")
            yield Static(HINT, classes="dialog-hint")

    @on(Input.Submitted)
    def _submit(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss(event.value.strip())
