"""The ragtui application: four panes (collections, query, sources, synthesis) and a status line."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import (
    DataTable,
    Footer,
    Header,
    Input,
    ListView,
    Markdown,
    Static,
    TabbedContent,
    TabPane,
)

from ragtui.config import Settings

SOURCE_COLUMNS = ("#", "rel", "collection", "file", "page", "legs", "annotation")


class RagtuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "ragtui"
    BINDINGS: ClassVar = [
        Binding("q", "quit", "Quit"),
        Binding("slash", "focus_query", "Query", key_display="/"),
    ]

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="collections-pane"):
                yield Static("Collections", classes="pane-title")
                yield ListView(id="collections")
            with Vertical(id="work"):
                yield Input(placeholder="Ask a question and press enter", id="query")
                with TabbedContent(id="sources", initial="relevant"):
                    for pane_id, title in (("relevant", "Relevant"), ("filtered", "Filtered"), ("all", "All")):
                        with TabPane(title, id=pane_id):
                            yield DataTable(id=f"{pane_id}-table", cursor_type="row")
                yield Markdown("", id="synthesis")
        yield Static(f"Ollama {self.settings.ollama.host}", id="status")
        yield Footer()

    def on_mount(self) -> None:
        for table in self.query(DataTable):
            table.add_columns(*SOURCE_COLUMNS)
        self.query_one("#query", Input).focus()

    def action_focus_query(self) -> None:
        self.query_one("#query", Input).focus()


def run_app(settings: Settings) -> int:
    RagtuiApp(settings).run()
    return 0
