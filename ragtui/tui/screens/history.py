"""The history screen: past sessions, newest first; enter reopens one, e exports it as Markdown, d deletes it."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowKey

from ragtui.model.conversation import SessionSummary
from ragtui.sanitize import one_line
from ragtui.tui.engine import AsyncWorkspace


class HistoryScreen(ModalScreen[int | None]):
    BINDINGS: ClassVar = [
        Binding("escape,q", "dismiss(None)", "Close"),
        Binding("e", "export", "Export Markdown"),
        Binding("b", "bibliography", "Export BibTeX and CSL-JSON"),
        Binding("d", "delete", "Delete"),
    ]

    def __init__(self, workspace: AsyncWorkspace, sessions: list[SessionSummary]) -> None:
        super().__init__()
        self.workspace = workspace
        self.sessions = {s.id: s for s in sessions}

    def compose(self) -> ComposeResult:
        with Vertical(id="history-box", classes="dialog"):
            yield Static("History: enter reopens a session, e exports it, d deletes it, esc closes",
                         classes="dialog-title")
            yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="history-note", classes="dialog-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("#", "when (UTC)", "query", "collections", "relevant/sources", "answer")
        for s in self.sessions.values():
            table.add_row(str(s.id), s.created_at[:16].replace("T", " "), Text(one_line(s.query)),
                          Text(one_line(", ".join(s.collections))), f"{s.relevant}/{s.sources}",
                          Text(one_line(s.stop_reason or "-")), key=str(s.id))   # Text: never read as markup
        if not self.sessions:
            self.query_one("#history-note", Static).update("No sessions yet: run a query first.")
        table.focus()

    @on(DataTable.RowSelected)
    def _open(self, event: DataTable.RowSelected) -> None:
        self.dismiss(int(event.row_key.value or 0))

    def _current(self) -> RowKey | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key

    async def action_export(self) -> None:
        key = self._current()
        if key is None:
            return
        path = await self.workspace.export_session(int(key.value or 0))
        self.query_one("#history-note", Static).update(Text(f"Exported to {one_line(str(path))}"))

    async def action_bibliography(self) -> None:
        """The session's cited documents as BibTeX and as CSL-JSON, beside the Markdown exports."""
        key = self._current()
        if key is None:
            return
        session_id = int(key.value or 0)
        written = [await self.workspace.export_session(session_id, fmt) for fmt in ("bibtex", "csl-json")]
        self.query_one("#history-note", Static).update(
            Text(one_line(f"Exported to {' and '.join(str(path) for path in written)}")))

    async def action_delete(self) -> None:
        key = self._current()
        if key is None:
            return
        table = self.query_one(DataTable)
        session_id = int(key.value or 0)
        await self.workspace.delete_session(session_id)
        table.remove_row(key)
        self.sessions.pop(session_id, None)
        self.query_one("#history-note", Static).update(f"Deleted session {session_id}.")
