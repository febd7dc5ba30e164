"""The history screen: past sessions, newest first; enter reopens one, e exports it as Markdown, d deletes it.

The `stale` column counts the sources the latest re-check against the documents found moved, changed or gone
(`ragtui history verify`, or an ingest that changed a cited file)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static
from textual.widgets.data_table import RowKey

from ragtui.model.conversation import SessionSummary
from ragtui.sanitize import one_line
from ragtui.tui.engine_door import AsyncWorkspace
from ragtui.tui.widgets.filter_bar import FilterBar, matches
from ragtui.tui.widgets.motions import MotionTable


def stale_cell(stale: int) -> Text:
    """How many of a session's citations are stale, in red; "" when none is (or it was never re-checked)."""
    return Text(f"{stale} stale", style="bold red") if stale else Text("")


class HistoryScreen(ModalScreen[int | None]):
    BINDINGS: ClassVar = [
        Binding("escape,q", "dismiss(None)", "Close"),
        Binding("e", "export", "Export Markdown"),
        Binding("b", "bibliography", "Export BibTeX and CSL-JSON"),
        Binding("d", "delete", "Delete"),
        Binding("f,slash", "filter", "Filter"),
        Binding("o", "open_export", "Open in $EDITOR"),
    ]

    def __init__(self, workspace: AsyncWorkspace, sessions: list[SessionSummary]) -> None:
        super().__init__()
        self.workspace = workspace
        self.sessions = {s.id: s for s in sessions}

    def compose(self) -> ComposeResult:
        with Vertical(id="history-box", classes="dialog"):
            yield Static("History: enter reopens, e exports, o opens the export in $EDITOR, d deletes, f filters",
                         classes="dialog-title")
            yield FilterBar(id="history-filter")
            yield MotionTable(id="history-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="history-note", classes="dialog-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("#", "when (UTC)", "query", "collections", "relevant/sources", "answer", "stale")
        self._rows()
        if not self.sessions:
            self.query_one("#history-note", Static).update("No sessions yet: run a query first.")
        table.focus()

    def _rows(self) -> None:
        """The sessions the filter keeps (every word in the query, the collections, the date or how it ended)."""
        table = self.query_one(DataTable)
        table.clear()
        words = self.query_one(FilterBar).words
        for s in self.sessions.values():
            if matches(words, s.query, " ".join(s.collections), s.created_at, s.stop_reason):
                table.add_row(str(s.id), s.created_at[:16].replace("T", " "), Text(one_line(s.query)),
                              Text(one_line(", ".join(s.collections))), f"{s.relevant}/{s.sources}",
                              Text(one_line(s.stop_reason or "-")), stale_cell(s.stale),
                              key=str(s.id))   # Text: never read as markup
        if words:
            self.query_one("#history-note", Static).update(
                Text(f"{table.row_count} of {len(self.sessions)} sessions hold every word of the filter"))

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    @on(Input.Changed, "#history-filter")
    def _filtered(self, event: Input.Changed) -> None:
        event.stop()
        self._rows()

    @on(FilterBar.Closed)
    def _filter_closed(self, event: FilterBar.Closed) -> None:
        event.stop()
        self._rows()
        if not event.bar.words:
            self.query_one("#history-note", Static).update("")
        self.query_one(DataTable).focus()

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

    async def action_open_export(self) -> None:
        """Export the session as Markdown and open the export in $VISUAL / $EDITOR."""
        from ragtui.tui.editor import EditorFailed, run_editor

        key = self._current()
        if key is None:
            return
        path = await self.workspace.export_session(int(key.value or 0))
        try:
            run_editor(self.app, path)
        except EditorFailed as exc:
            self.notify(str(exc), severity="warning")
        self.query_one("#history-note", Static).update(Text(f"Exported to {path}"))

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
