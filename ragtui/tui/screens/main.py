"""The main screen: the collections pane, the research view, a status line and a footer.

The screen keeps the layout (the width classes, the collections pane shown or
hidden), the start-up work (it asks the view to probe the servers and WordNet, warms
the engine up, checks the history file), the collections and the dialogs that are
not about one session (history, ingest, a new collection). The research itself (the
session, its workers, its verbs and their guards, the panes that show it and the
status line they write) is the ResearchView (tui/widgets/research.py); the screen
hands it the active collections and the status line, and each research key calls it
in one line.

Typing is safe: the query bar keeps the focus after enter (its text selected, so the
next question replaces it), and the panes' one-letter actions only run where the
focus is on a pane (tab, or esc, moves there).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer

from ragtui.config import Settings
from ragtui.errors import RagtuiError, describe
from ragtui.model.collection import CollectionInfo
from ragtui.model.conversation import SessionSummary
from ragtui.tui import keymap
from ragtui.tui.engine_door import AsyncWorkspace, HistoryUnusable, configured_servers
from ragtui.tui.widgets.collections import CollectionsPane
from ragtui.tui.widgets.research import ResearchView
from ragtui.tui.widgets.status import StatusLine

COLLECTIONS_POLL_S = 5.0  # how often the collections pane checks whether another process changed a collection
# The screen's class by terminal width (app.tcss): below 100 columns the collections pane hides (b shows it),
# from 150 sources and answer sit side by side.
WIDTH_CLASSES = [(0, "-narrow"), (100, "-medium"), (150, "-wide")]


class MainScreen(Screen[None]):
    BINDINGS: ClassVar = [*keymap.FIELD_TABS, *keymap.bindings("main")]
    HORIZONTAL_BREAKPOINTS = WIDTH_CLASSES

    active: reactive[frozenset[str]] = reactive(frozenset())   # the collections a query searches
    collections_shown: reactive[bool | None] = reactive(None)  # b's choice; None: the width decides

    def __init__(self, settings: Settings, workspace: AsyncWorkspace, *, keys: keymap.KeyTable | None = None,
                 cursor_blink: bool = True, start_workers: bool = True,
                 ingest_on_start: tuple[Path, str] | None = None) -> None:
        """`keys`: each action's keys (keymap.resolve; the defaults when not given); `start_workers=False` skips
        the start-up probes (tests set the state); `ingest_on_start` (path, collection) opens the ingest screen
        and starts it."""
        super().__init__()
        self.settings = settings
        self.keys = keys if keys is not None else keymap.defaults()
        keymap.bind_own_keys(self, self.keys)
        self.workspace = workspace
        self.cursor_blink = cursor_blink
        self.start_workers = start_workers
        self.ingest_on_start = ingest_on_start
        self.collection_views: list[CollectionInfo] = []
        self.history_damage = ""                   # why the history cannot be used (sessions then run unsaved)
        self.research = ResearchView(settings, workspace, keys=self.keys, cursor_blink=cursor_blink, id="work")
        self.collections_stamp: object = None      # the collections as the last poll saw them (poll_collections)
        self.collections_listed = asyncio.Event()  # the first listing ended: `active` holds what queries search
        llm = settings.llm
        self.status = StatusLine(configured_servers(settings), llm.model, llm.annotator, id="status")

    # --- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield CollectionsPane(self.workspace, id="collections-pane")
            yield self.research
        yield self.status
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.research.use_status_line(self.status)
        if self.start_workers:
            self.app.call_after_refresh(self._start_background)

    def _start_background(self) -> None:
        self.start_engine()
        self.load_collections()
        self.set_interval(COLLECTIONS_POLL_S, self.poll_collections)
        self.research.check_wordnet()
        self.check_history()
        if self.ingest_on_start is not None:
            self.action_ingest(*self.ingest_on_start)

    def watch_collections_shown(self, shown: bool | None) -> None:
        self.set_class(shown is True, "-collections-shown")
        self.set_class(shown is False, "-collections-hidden")

    def action_toggle_collections(self) -> None:
        self.collections_shown = not self.query_one(CollectionsPane).display
        if self.collections_shown:
            self.set_focus(self.query_one("#collections"))

    # --- start-up probes ------------------------------------------------------------------

    @work(group="engine")
    async def start_engine(self) -> None:
        self.research.probe()
        await self.workspace.warm_up()   # keyword-only sessions need the engine too
        await self.collections_listed.wait()    # at 1M chunks the listing can outlast the imports
        await self.workspace.prepare(sorted(self.active))   # the first query then skips the stores' cold loads

    @work(group="probe")
    async def check_history(self) -> None:
        """A damaged history file is said once at start-up; queries still run, unsaved, and `h` stays shut."""
        try:
            damage = await self.workspace.history_damage()
        except Exception as exc:  # e.g. a history from a newer ragtui: the same, history is optional
            damage = describe(exc)
        if damage:
            self._history_unusable(damage)

    @on(ResearchView.HistoryUnusable)
    def _history_damaged(self, message: ResearchView.HistoryUnusable) -> None:
        self._history_unusable(message.damage)

    def _history_unusable(self, damage: str) -> None:
        if not self.history_damage:
            self.history_damage = damage
            self.notify(f"History unavailable, sessions are not saved: {damage}", severity="error", timeout=30)

    # --- collections ----------------------------------------------------------------------

    @work(group="collections", exclusive=True)
    async def load_collections(self) -> None:
        try:
            await self._load_collections()
        finally:
            self.collections_listed.set()

    async def _load_collections(self) -> None:
        try:
            views: list[CollectionInfo] | str = await self.workspace.collections()
        except Exception as exc:  # shown in the pane: the rest of the app still works
            views = f"Collections unavailable:\n{describe(exc)}"
        pane = next(iter(self.query(CollectionsPane)), None)
        if pane is None or not pane.is_attached:   # the app is quitting: nothing left to show the list in
            return
        if isinstance(views, str):
            pane.set_note(views)
        else:
            self.show_collections(views)

    @work(group="collections-poll", exclusive=True)
    async def poll_collections(self) -> None:
        """Reload the collections pane when a collection changed behind it (another process ingested into it,
        deleted or created one): its stamp is a stat and a folder listing per collection."""
        try:
            stamp = await self.workspace.collections_stamp()
        except Exception:  # the next poll, or ctrl+r, tries again; load_collections says what is wrong
            return
        if stamp != self.collections_stamp:
            self.collections_stamp = stamp
            self.load_collections()

    def show_collections(self, views: list[CollectionInfo]) -> None:
        """Render the collections; the first time, every non-empty one is active."""
        if not self.collection_views:
            self.active |= {v.name for v in views if v.chunks}
        self.active &= {v.name for v in views}
        self.collection_views = views
        self.query_one(CollectionsPane).set_collections(views, self.active)
        self.research.idle_note("No collections yet: esc, then i ingests a folder or n creates a collection."
                                if not views else "No query yet: type a question and press enter.")

    def watch_active(self, active: frozenset[str]) -> None:
        self.research.active = active
        self.query_one(CollectionsPane).show_active(active)

    @on(CollectionsPane.Toggled)
    def _toggled(self, message: CollectionsPane.Toggled) -> None:
        self.active ^= {message.name}

    # --- the research view's keys: each calls the view, which holds the verb and its guard ---------------

    def action_focus_query(self) -> None:
        self.research.focus_query()

    def action_show_tab(self, tab: str) -> None:
        self.research.show_tab(tab)

    def action_filter_sources(self) -> None:
        self.research.filter_sources()

    def action_continue_answer(self) -> None:
        self.research.continue_answer()

    def action_synthesize(self) -> None:
        self.research.synthesize()

    def action_reannotate_selected(self) -> None:
        self.research.reannotate_selected()

    def action_reannotate_all(self) -> None:
        self.research.reannotate_all()

    def action_reannotate_with(self) -> None:
        self.research.reannotate_with()

    def action_toggle_source(self) -> None:
        self.research.toggle_source()

    def action_cancel(self) -> None:
        self.research.cancel_or_leave()

    def action_edit_question(self) -> None:
        self.research.edit_question()

    def action_research_run(self) -> None:
        self.research.research_run()

    def action_cancel_part(self) -> None:
        self.research.cancel_part()

    def action_edit_rewrite(self) -> None:
        self.research.edit_rewrite()

    def action_open_answer(self) -> None:
        self.research.open_answer()

    def action_details(self) -> None:
        self.research.show_details()

    def action_copy_answer(self) -> None:
        self.research.copy_answer()

    def action_copy_source(self) -> None:
        self.research.copy_source()

    def action_page_view(self) -> None:
        self.research.page_view_selected()

    async def action_earlier_turn(self) -> None:
        await self.research.step_turn(-1)

    async def action_later_turn(self) -> None:
        await self.research.step_turn(1)

    async def action_new_session(self) -> None:
        await self.research.new_session()

    # --- dialogs -----------------------------------------------------------------------------

    @work(group="history", exclusive=True)
    async def action_history(self) -> None:
        from ragtui.tui.screens.history import HistoryScreen

        if self.history_damage:
            self.notify(f"History unavailable: {self.history_damage}", severity="error")
            return
        try:
            sessions = await self.workspace.history()
        except HistoryUnusable as exc:            # found damaged since start-up
            self._history_unusable(describe(exc))
            return
        except Exception as exc:  # shown, not raised: history is optional to the rest of the app
            self.notify(f"History unavailable: {describe(exc)}", severity="error")
            return
        chosen = await self.app.push_screen_wait(HistoryScreen(self.workspace, sessions))
        if chosen is not None:
            await self._reopen(chosen)

    async def _reopen(self, session_id: int) -> None:
        try:
            await self.research.reopen(session_id)
        except RagtuiError as exc:  # e.g. the session was deleted meanwhile
            self.notify(describe(exc), severity="error")

    async def past_sessions(self) -> list[SessionSummary]:
        """The stored sessions, newest first (the quick switcher offers them)."""
        return await self.workspace.history()

    @work(group="history", exclusive=True)
    async def open_session(self, session_id: int) -> None:
        """Reopen a past session (the quick switcher)."""
        await self._reopen(session_id)

    def switch_collection(self, name: str) -> None:
        """Search only `name` (the quick switcher); space in the collections pane adds others back."""
        self.active = frozenset({name})
        self.notify(f"Searching {name} only (b shows the collections; space adds one).")

    def action_switcher(self) -> None:
        from textual.command import CommandPalette

        from ragtui.tui.switcher import SWITCHER_PLACEHOLDER, SwitchCommands

        self.app.push_screen(CommandPalette(providers=[SwitchCommands], placeholder=SWITCHER_PLACEHOLDER))

    @work(group="ingest-dialog", exclusive=True)
    async def action_ingest(self, path: Path | None = None, collection: str = "") -> None:
        """The ingest screen; given a path and collection it starts at once."""
        from ragtui.tui.screens.ingest import IngestScreen

        names = [v.name for v in self.collection_views]
        default = collection or (sorted(self.active)[0] if self.active else (names[0] if names else ""))
        screen = IngestScreen(self.workspace, default, str(path or ""), start=path is not None,
                              cursor_blink=self.cursor_blink, on_started=self.ingest_started,
                              on_ended=self.ingest_ended)
        await self.app.push_screen_wait(screen)

    def ingest_started(self, collection: str) -> None:
        """An ingest from the TUI is under way: the pane shows its collection as ingesting at once (not as the
        state it was left in, "interrupted" for a cut run it resumes, until the next poll)."""
        self.load_collections()

    def ingest_ended(self, collection: str, finished: bool) -> None:
        """An ingest from the TUI ended: the pane shows the collections' new states at once, and a
        collection just ingested is searched by the next query."""
        if finished:
            self.active |= {collection}
        self.load_collections()

    def action_refresh_collections(self) -> None:
        self.load_collections()
        self.notify("Collections refreshed.")

    @work(group="new-collection", exclusive=True)
    async def action_new_collection(self) -> None:
        from ragtui.tui.screens.new_collection import NewCollectionScreen

        result = await self.app.push_screen_wait(NewCollectionScreen({v.name for v in self.collection_views}))
        if result is None:
            return
        name, topic = result
        try:
            await self.workspace.create_collection(name, topic)
        except Exception as exc:  # e.g. the registry refused the name: tell the user, keep going
            self.notify(f"Could not create {name}: {describe(exc)}", severity="error")
            return
        self.notify(f"Created collection {name}. Press i to ingest into it.")
        self.active |= {name}
        self.load_collections()
