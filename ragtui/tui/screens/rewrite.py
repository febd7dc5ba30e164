"""Edit a follow-up's standalone rewrite: the turn is retrieved again with the text the user gives."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ragtui.sanitize import clean


class RewriteScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, question: str, rewrite: str) -> None:
        super().__init__()
        self.question = question
        self.rewrite = rewrite

    def compose(self) -> ComposeResult:
        with Vertical(id="rewrite-box", classes="dialog"):
            yield Static("Retrieve this follow-up as", classes="dialog-title")
            yield Static(Text(f"Typed: {clean(self.question)}"))
            yield Input(self.rewrite, placeholder="a standalone question", id="rewrite-text")
            yield Static("enter retrieves and answers again (the typed words still count) · esc cancels",
                         classes="dialog-hint")

    @on(Input.Submitted)
    def _submit(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if text:
            self.dismiss(text)
