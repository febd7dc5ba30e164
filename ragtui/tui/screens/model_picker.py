"""Re-annotate with another model or prompt: pick one of the models Ollama lists, a prompt file, and the scope."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, RadioButton, RadioSet, Static
from textual.widgets.option_list import Option

from ragtui.paths import user_path
from ragtui.sanitize import one_line


@dataclass(frozen=True)
class Reannotation:
    """What the picker chose: the model, a prompt file ("" for the configured one), and which sources."""

    model: str
    prompt_file: str
    numbers: tuple[int, ...] | None      # None: every source of the turn


class ModelPickerScreen(ModalScreen[Reannotation | None]):
    BINDINGS: ClassVar = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, models: Sequence[str], current: str, selected: int | None) -> None:
        super().__init__()
        self.models = list(dict.fromkeys(models)) or [current]
        self.current = current
        self.selected = selected

    def compose(self) -> ComposeResult:
        with Vertical(id="model-picker-box", classes="dialog"):
            yield Static("Re-annotate with", classes="dialog-title")
            options = [Option(Text(one_line(m) + ("  (current)" if m == self.current else "")), id=m)
                       for m in self.models]
            yield OptionList(*options, id="picker-models")
            yield Input(placeholder="prompt file (empty: the configured prompt)", id="picker-prompt")
            with RadioSet(id="picker-scope"):
                one = f"the selected source [{self.selected}]" if self.selected else "no source selected"
                yield RadioButton(one, value=self.selected is not None, disabled=self.selected is None,
                                  id="scope-selected")
                yield RadioButton("every source of this turn", value=self.selected is None, id="scope-all")
            yield Static("enter on a model re-annotates · tab moves · esc cancels", id="picker-note",
                         classes="dialog-hint")

    def on_mount(self) -> None:
        models = self.query_one(OptionList)
        if self.current in self.models:
            models.highlighted = self.models.index(self.current)
        models.focus()

    @on(OptionList.OptionSelected)
    @on(Input.Submitted)
    def _choose(self) -> None:
        models = self.query_one(OptionList)
        if models.highlighted is None:
            return
        prompt = self.query_one("#picker-prompt", Input).value.strip()
        if prompt and not user_path(prompt).is_file():
            self.query_one("#picker-note", Static).update(Text(f"No such prompt file: {prompt}"))
            return
        every = self.query_one("#scope-all", RadioButton).value or self.selected is None
        self.dismiss(Reannotation(self.models[models.highlighted], prompt,
                                  None if every else (self.selected or 0,)))
