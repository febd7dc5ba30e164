"""The ingest screen: pick a path and a collection, then watch progress, skipped files and the report.

The ingest runs in a worker on this screen; esc cancels it (the engine resumes
an interrupted ingest next time), a second esc closes the screen.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, ProgressBar, RichLog, Static

from ragtui.errors import describe
from ragtui.events import Event, FileSkipped, IngestFinished, IngestProgress, Notice
from ragtui.paths import user_path
from ragtui.sanitize import one_line
from ragtui.tui.engine_door import AsyncWorkspace, CollectionError, report_lines, validate_collection_name
from ragtui.tui.keymap import FIELD_TABS


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA -"
    minutes, secs = divmod(round(seconds), 60)
    return f"ETA {minutes}m{secs:02d}s" if minutes else f"ETA {secs}s"


class IngestScreen(ModalScreen[bool]):
    """Dismisses with True when something was ingested, so the caller refreshes the collections."""

    BINDINGS: ClassVar = [*FIELD_TABS, Binding("escape", "cancel_or_close", "Cancel / close")]

    def __init__(self, workspace: AsyncWorkspace, default_collection: str = "", default_path: str = "",
                 start: bool = False, cursor_blink: bool = True,
                 on_started: Callable[[str], None] | None = None,
                 on_ended: Callable[[str, bool], None] | None = None) -> None:
        """`on_started(collection)` is called when an ingest's first event arrives (the ingest holds the
        collection and has marked it "ingesting"), and `on_ended(collection, finished)` when it ends (finished,
        cancelled or failed), while this screen is still open, so the collections pane behind it shows the
        collection's state at once."""
        super().__init__()
        self.on_started = on_started
        self.on_ended = on_ended
        self.workspace = workspace
        self.cursor_blink = cursor_blink
        self.start = start
        self.default_collection = default_collection
        self.default_path = default_path
        self.running = False
        self.changed = False
        self.skipped = 0

    def compose(self) -> ComposeResult:
        with Vertical(id="ingest-box", classes="dialog"):
            yield Static("Ingest", classes="dialog-title")
            with Horizontal(id="ingest-form"):
                yield Input(self.default_path, placeholder="folder or file to ingest", id="ingest-path")
                yield Input(self.default_collection, placeholder="collection", id="ingest-collection")
            yield Static("enter starts · esc cancels a running ingest, then closes", id="ingest-hint",
                         classes="dialog-hint")
            yield ProgressBar(total=None, show_eta=False, id="ingest-bar")
            yield Static("", id="ingest-numbers")
            yield RichLog(id="ingest-log", wrap=True, markup=False, auto_scroll=True, min_width=20)

    def on_mount(self) -> None:
        self.query_one("#ingest-path", Input).focus()
        for field in self.query(Input):
            field.cursor_blink = self.cursor_blink
        if self.start:
            self._start()

    @on(Input.Submitted)
    def _start(self) -> None:
        if self.running:
            return
        path = self.query_one("#ingest-path", Input).value.strip()
        collection = self.query_one("#ingest-collection", Input).value.strip()
        if not path or not collection:
            self.query_one("#ingest-hint", Static).update(Text("Give both a path and a collection.", style="yellow"))
            return
        try:
            validate_collection_name(collection)
        except CollectionError as exc:    # before anything renders the name: "[/]" is Rich markup
            self.query_one("#ingest-hint", Static).update(Text(one_line(describe(exc)), style="yellow"))
            return
        target = user_path(path)
        if not target.exists():
            self.query_one("#ingest-hint", Static).update(
                Text(f"{one_line(str(target))}: no such file or folder", style="yellow"))
            return
        self.run_ingest(target, collection)

    @work(exclusive=True, group="ingest")
    async def run_ingest(self, path: Path, collection: str) -> None:
        self.running = True
        self.skipped = 0
        started = finished = False
        self.query_one("#ingest-log", RichLog).clear()
        self.query_one("#ingest-hint", Static).update(Text(f"Ingesting into {collection} … esc cancels"))
        try:
            async for event in self.workspace.ingest(path, collection):
                if not started and self.on_started is not None:
                    self.on_started(collection)
                started = True
                self.apply(event)
                finished = finished or isinstance(event, IngestFinished)
        except Exception as exc:  # the engine's own failure: show it, keep the screen usable
            self.query_one("#ingest-hint", Static).update(Text(f"Ingest failed: {one_line(describe(exc))}",
                                                                    style="bold red"))
        finally:
            self.running = False
            if self.on_ended is not None:
                self.on_ended(collection, finished)

    def apply(self, event: Event) -> None:
        """Render one ingest event."""
        log = self.query_one("#ingest-log", RichLog)
        if isinstance(event, IngestProgress):
            bar = self.query_one("#ingest-bar", ProgressBar)
            bar.update(total=max(event.files_total, 1), progress=event.files_done)
            numbers = (f"{event.files_done}/{event.files_total} files · {event.chunks} chunks · "
                       f"{event.embedded} embedded · {event.embed_rate:.0f}/s · {format_eta(event.eta_s)}")
            if self.skipped:
                numbers += f" · {self.skipped} skipped"
            if event.current:
                numbers += f"\n{one_line(event.current)}"
            self.query_one("#ingest-numbers", Static).update(Text(numbers))    # a file name is never markup
        elif isinstance(event, FileSkipped):
            self.skipped += 1
            log.write(Text(f"skipped {one_line(event.source)}: {one_line(event.reason)}", style="yellow"))
        elif isinstance(event, Notice):
            style = {"error": "bold red", "warning": "yellow"}.get(event.level, "")
            log.write(Text(one_line(event.message), style=style))
        elif isinstance(event, IngestFinished):
            self.changed = True
            bar = self.query_one("#ingest-bar", ProgressBar)
            bar.update(total=bar.total or 1, progress=bar.total or 1)
            for line in report_lines(event.report):
                log.write(Text(one_line(line)))
            self.query_one("#ingest-hint", Static).update(
                Text(f"Finished ingesting into {event.collection}. esc closes.", style="bold green"))

    def action_cancel_or_close(self) -> None:
        if self.running:
            self.workers.cancel_group(self, "ingest")
            self.running = False
            self.query_one("#ingest-hint", Static).update(
                Text("Cancelled; the next ingest of this path resumes where it stopped.", style="yellow"))
            return
        self.dismiss(self.changed)
