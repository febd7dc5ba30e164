"""The help screen: every key, built from the keymap so it cannot go stale."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ragtui.tui.keymap import ACTIONS, MOTION_KEYS, WIDGET_KEYS, KeyTable, defaults, keys_display


def keys_table(keys: KeyTable) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 1), expand=True)
    table.add_column("key", style="bold", no_wrap=True, width=16)
    table.add_column("what", ratio=1)
    for action in ACTIONS:
        table.add_row(Text(keys_display(keys[action.id])), action.help)   # Text: a key such as [ is not markup
    table.add_row("", "")
    for key, what in (*WIDGET_KEYS, *MOTION_KEYS):
        table.add_row(key, what)
    return table


class HelpScreen(ModalScreen[None]):
    # the help key closes it too: its binding shares the help action's id, so the [keys] table rebinds both
    BINDINGS: ClassVar = [Binding("escape,q", "dismiss", "Close"),
                          Binding("question_mark", "dismiss", "Close", show=False, id="help")]

    def __init__(self, keys: KeyTable | None = None) -> None:
        """`keys`: each action's keys as the [keys] table gives them (the defaults when not given)."""
        super().__init__()
        self.keys = keys if keys is not None else defaults()

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box", classes="dialog"):
            yield Static("ragtui keys", classes="dialog-title")
            yield Static(keys_table(self.keys))
            yield Static("esc closes this screen", classes="dialog-hint")
