"""The notices log: every notice of this run in full, newest last (toasts show one line of each, briefly)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen
from textual.widgets import RichLog, Static

STYLE: dict[SeverityLevel, str] = {"information": "", "warning": "yellow", "error": "bold red"}


@dataclass(frozen=True)
class LoggedNotice:
    at: str               # HH:MM:SS
    severity: SeverityLevel
    message: str


class NoticesScreen(ModalScreen[None]):
    BINDINGS: ClassVar = [Binding("escape,q,exclamation_mark", "dismiss", "Close")]

    def __init__(self, notices: list[LoggedNotice]) -> None:
        super().__init__()
        self.notices = notices

    def compose(self) -> ComposeResult:
        with Vertical(id="notices-box", classes="dialog"):
            yield Static(f"Notices ({len(self.notices)})", classes="dialog-title")
            yield RichLog(id="notices-log", wrap=True, markup=False, min_width=20)
            yield Static("esc closes", classes="dialog-hint")

    def on_mount(self) -> None:
        log = self.query_one(RichLog)
        if not self.notices:
            log.write(Text("Nothing yet.", style="dim"))
        for notice in self.notices:
            line = Text(f"{notice.at} ", style="dim")
            line.append(notice.message, style=STYLE[notice.severity])   # plain text: markup is not read
            log.write(line)
