"""Why this source: the engine's explanation (ragtui.retrieve.explain) of how a source was found.

Per collection the keyword tier, words kept and dropped with their IDF, synonyms
and hits per leg; per source its rank and score in each leg and the fused score.
The lines come from the engine's one formatter (the same `ragtui query` prints)
and are shown as plain text, never as markup: they hold document and model text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ragtui.sanitize import clean, one_line


class DetailsScreen(ModalScreen[None]):
    BINDINGS: ClassVar = [Binding("escape,q,w", "dismiss", "Close")]

    def __init__(self, title: str, lines: Sequence[str]) -> None:
        super().__init__()
        self.title_text = title
        self.lines = list(lines)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="details-box", classes="dialog"):
            yield Static(Text(one_line(self.title_text)), classes="dialog-title")
            yield Static(Text(clean("\n".join(self.lines))), id="details-text")
            yield Static("esc closes", classes="dialog-hint")
