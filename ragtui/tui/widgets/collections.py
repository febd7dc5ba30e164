"""The collections pane: every collection with its topic, size, ingest state and whether a folder is watched for it
(`ingest --watch`); space toggles which are searched, d removes files from the highlighted collection, K builds its
keyword index again from its records and I shows what `collections info` reports of it, its entropy histogram drawn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Label, ListItem, ListView, Static

from ragtui.errors import describe
from ragtui.model.collection import CollectionInfo
from ragtui.sanitize import one_line
from ragtui.tui.widgets.motions import MotionList

if TYPE_CHECKING:
    from ragtui.tui.engine_door import AsyncWorkspace


class CollectionItem(ListItem):
    def __init__(self, view: CollectionInfo, active: bool) -> None:
        self.view = view
        self.active = active
        # Kept, not looked up: a row the pane has just made (each reload makes new ones) mounts its label only when
        # the row itself is composed, a moment later, and the active set can change in between (an ingest's end).
        self.text_label = Label(self._text())
        super().__init__(self.text_label)

    def _text(self) -> Text:
        v = self.view
        text = Text(no_wrap=not v.damaged, overflow="ellipsis")   # a damaged one's reason is read whole
        text.append("[x] " if self.active else "[ ] ", style="bold" if self.active else "dim")
        text.append(one_line(v.name), style="bold" if self.active else "")
        text.append(f"\n    {v.chunks} chunks", style="dim")
        if v.state != "ready":
            joint = " · " if len(v.state) <= 10 else "\n    "  # "needs embeddings" gets a line of its own
            text.append(f"{joint}{v.state}", style="red" if v.state in ("interrupted", "damaged") else "yellow")
        if v.watched:                                          # `ingest --watch` keeps it in step with a folder
            text.append(" · watched", style="cyan")
        if v.damaged:                                          # which file, and why (the CLI deletes it)
            text.append(f"\n    {one_line(v.damaged)}", style="red")
        if v.topic:
            text.append(f"\n    {one_line(v.topic)}", style="italic dim")
        return text

    def set_active(self, active: bool) -> None:
        self.active = active
        self.text_label.update(self._text())


class CollectionsPane(Vertical):
    """Shows the collections and which are active; the screen owns the active set, space asks it to flip one."""

    BINDINGS: ClassVar = [Binding("space", "toggle_collection", "Toggle collection"),
                          Binding("d", "remove_files", "Remove files"),
                          Binding("K", "rebuild_keyword", "Rebuild keyword index"),
                          Binding("I", "collection_info", "Collection info")]

    def __init__(self, workspace: AsyncWorkspace, **kwargs: Any) -> None:
        """`workspace`: the screen's door to the engine, for the files removed and the keyword index rebuilt."""
        super().__init__(**kwargs)
        self.workspace = workspace

    @dataclass
    class Toggled(Message):
        """Space on a collection: flip whether queries search it."""

        name: str

    def compose(self) -> ComposeResult:
        yield Static("Collections", classes="pane-title")
        yield MotionList(id="collections")
        yield Static("", id="collections-note")

    def set_collections(self, views: list[CollectionInfo], active: frozenset[str]) -> None:
        """Show these collections; `active` names the ones queries search."""
        listing = self.query_one(ListView)
        listing.clear()
        listing.extend(CollectionItem(v, v.name in active) for v in views)
        listing.index = 0 if views else None
        self._note(bool(views), active)

    def show_active(self, active: frozenset[str]) -> None:
        items = list(self.query(CollectionItem))
        for item in items:
            item.set_active(item.view.name in active)
        self._note(bool(items), active)

    def _note(self, any_collection: bool, active: frozenset[str]) -> None:
        note = self.query_one("#collections-note", Static)
        if not any_collection:
            note.update("No collections yet.\nn: new · i: ingest")
        elif not active:
            note.update("None active: space toggles")
        else:
            note.update("")

    def set_note(self, text: str) -> None:
        self.query_one("#collections-note", Static).update(Text(text))   # plain: an error may hold brackets

    def action_toggle_collection(self) -> None:
        item = self.query_one(ListView).highlighted_child
        if isinstance(item, CollectionItem):
            self.post_message(self.Toggled(item.view.name))

    def _highlighted(self) -> str | None:
        item = self.query_one(ListView).highlighted_child
        return item.view.name if isinstance(item, CollectionItem) else None

    @work(group="collection-maintenance", exclusive=True)
    async def action_remove_files(self) -> None:
        """Ask for a file or folder of the highlighted collection and drop it from its stores (the pane's poll
        shows the new counts)."""
        from ragtui.tui.screens.remove_files import RemoveFilesScreen

        if (name := self._highlighted()) is None:
            return
        path = await self.app.push_screen_wait(RemoveFilesScreen(name))
        if path is None:
            return
        try:
            report = await self.workspace.remove_files(name, [path])
        except Exception as exc:  # a path it does not hold, an ingest running: said, nothing changed
            self.notify(one_line(f"Nothing removed from {name}: {describe(exc)}"), severity="error")
            return
        from ragtui.tui.engine_door import recheck_line

        self.notify(one_line(f"Removed {len(report.removed)} file(s) from {name}: {', '.join(report.removed)}"))
        if report.sessions_rechecked:        # saved sessions cited a removed file: what their re-check found
            self.notify(recheck_line(report), severity="warning" if report.citations_stale else "information")

    @work(group="collection-info", exclusive=True)
    async def action_collection_info(self) -> None:
        """What `collections info` reports of the highlighted collection, in a dialog, its histogram drawn."""
        from ragtui.tui.screens.collection_info import CollectionInfoScreen

        if (name := self._highlighted()) is None:
            return
        try:
            profile = await self.workspace.collection_profile(name)
        except Exception as exc:  # deleted meanwhile, records that cannot be read: said, nothing shown
            self.notify(one_line(f"No information on {name}: {describe(exc)}"), severity="error")
            return
        await self.app.push_screen(CollectionInfoScreen(profile))

    @work(group="collection-maintenance", exclusive=True)
    async def action_rebuild_keyword(self) -> None:
        """Build the highlighted collection's keyword index again from its records; queries keep the old one
        meanwhile."""
        if (name := self._highlighted()) is None:
            return
        self.notify(f"Rebuilding the keyword index of {name} from its records…")
        try:
            chunks = await self.workspace.rebuild_keyword(name)
        except Exception as exc:  # an ingest running, records that cannot be read: said, the old index kept
            self.notify(one_line(f"The keyword index of {name} was not rebuilt: {describe(exc)}"), severity="error")
            return
        self.notify(f"Rebuilt the keyword index of {name}: {chunks} chunks.")
