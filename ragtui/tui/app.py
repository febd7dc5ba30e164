"""The ragtui application: collections, query, sources and synthesis panes, a status line and a footer.

Everything slow (the Ollama probe, retrieval, annotation, synthesis, ingest,
loading the engine's heavy modules) runs in Textual workers; the app only
renders the engine's events (ragtui.events) as they arrive. The engine is reached
through `Engine` (tui/engine.py) and nothing else.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import App, ComposeResult
from textual.containers import Container, Horizontal, Vertical
from textual.events import Resize
from textual.widgets import Footer, Input

from ragtui.collections import CollectionInfo
from ragtui.config import Settings
from ragtui.events import (
    AnnotationFailed,
    AnnotationFinished,
    AnnotationStarted,
    Event,
    Notice,
    RetrievalStarted,
    SessionSaved,
    SourcesReady,
    StageFailed,
    SynthesisFinished,
    SynthesisStarted,
    SynthesisToken,
)
from ragtui.model import AnnotationState
from ragtui.tui import keymap
from ragtui.tui.clipboard import osc52, save_copy
from ragtui.tui.commands import RagtuiCommands
from ragtui.tui.engine import Engine
from ragtui.tui.messages import CitationClicked, CollectionToggled, OllamaProbed, SourceChosen
from ragtui.tui.themes import DEFAULT_THEME, load_themes, shipped_themes_dir, user_themes_dir
from ragtui.tui.widgets.collections import CollectionsPane
from ragtui.tui.widgets.query import QueryInput
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.status import StatusLine
from ragtui.tui.widgets.synthesis import SynthesisView

if TYPE_CHECKING:
    from ragtui.retrieve.result import RetrievalMeta

NARROW_BELOW = 100       # columns: below this the collections pane hides (b shows it)
WIDE_FROM = 150          # columns: from this on, sources and answer sit side by side
RESEARCH = "research"    # worker group of everything that talks to the LLM or the stores for a session


def describe_retrieval(meta: RetrievalMeta | None) -> str:
    """`tier AND/OR · 42 ms` from retrieval_meta: the keyword tiers that fired and the retrieval time."""
    if meta is None:
        return ""
    tiers = list(dict.fromkeys(str(c.keyword.tier) for c in meta.collections.values()))
    ms = (meta.legs_and_merge_ms or 0) + (meta.postprocess_ms or 0)
    embed_ms = sum(meta.embed_ms.values())
    parts = [f"tier {'/'.join(tiers)}"] if tiers else []
    if ms or embed_ms:
        parts.append(f"{ms + embed_ms:.0f} ms" + (f" (embed {embed_ms:.0f})" if embed_ms else ""))
    return " · ".join(parts)


class RagtuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "ragtui"
    BINDINGS = keymap.bindings()
    COMMANDS = App.COMMANDS | {RagtuiCommands}

    def __init__(self, settings: Settings, *, in_tmux: bool = False, cursor_blink: bool = True,
                 start_workers: bool = True, theme_dirs: list[Path] | None = None,
                 ingest_on_start: tuple[Path, str] | None = None) -> None:
        """`in_tmux` wraps OSC 52 for tmux; `start_workers=False` skips the start-up probes (tests set state);
        `ingest_on_start` (path, collection) opens the ingest screen and starts it (the demo's first run)."""
        super().__init__()
        self.settings = settings
        self.engine = Engine(settings)
        self.in_tmux = in_tmux
        self.cursor_blink = cursor_blink
        self.start_workers = start_workers
        self.ingest_on_start = ingest_on_start
        self.session: Any = None
        self.ollama_up: bool | None = None
        self.ollama_problem = ""
        self.active: set[str] = set()
        self.collection_views: list[CollectionInfo] = []
        self.collections_shown: bool | None = None   # None: decided by the terminal's width
        self.startup_notes: list[tuple[str, str]] = []
        self.theme_names: list[str] = []
        self._load_themes(theme_dirs if theme_dirs is not None else [shipped_themes_dir(), user_themes_dir()])

    # --- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield CollectionsPane(id="collections-pane")
            with Vertical(id="work"):
                yield QueryInput(id="query")
                with Container(id="results"):
                    yield SourcesPanel(id="sources")
                    yield SynthesisView(id="synthesis")
        llm = self.settings.llm
        yield StatusLine(self.settings.ollama.host, llm.model, llm.annotator, id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        query = self.query_one(QueryInput)
        query.cursor_blink = self.cursor_blink
        query.focus()
        self._show_active()
        for level, message in self.startup_notes:
            self.notify(message, severity=level, timeout=15)
        self.set_interval(0.1, self._spin)
        if self.start_workers:
            self.call_after_refresh(self._start_background)

    def _start_background(self) -> None:
        self.probe_ollama()
        self.load_collections()
        self.check_wordnet()
        if self.ingest_on_start is not None:
            self.action_ingest(*self.ingest_on_start)

    @on(Resize)
    def _resized(self, event: Resize) -> None:
        self._layout(event.size.width)

    def _layout(self, width: int) -> None:
        narrow = width < NARROW_BELOW
        shown = (not narrow) if self.collections_shown is None else self.collections_shown
        self.query_one("#collections-pane").display = shown
        self.query_one("#results").set_class(width >= WIDE_FROM, "side-by-side")

    # --- themes -----------------------------------------------------------------------

    def _load_themes(self, directories: list[Path]) -> None:
        themes, errors = load_themes(directories)
        for theme in themes:
            self.register_theme(theme)
        self.theme_names = [t.name for t in themes]
        self.startup_notes += [("error", e) for e in errors]
        wanted = self.settings.ui.theme
        if wanted in self.available_themes:
            self.theme = wanted
            return
        if DEFAULT_THEME in self.available_themes:
            self.theme = DEFAULT_THEME
        self.startup_notes.append(("warning", f"theme {wanted!r} not found (ui.theme); using {self.theme}. "
                                              f"Available: {', '.join(self.theme_names)}"))

    def action_next_theme(self) -> None:
        names = self.theme_names or [self.theme]
        self.theme = names[(names.index(self.theme) + 1) % len(names)] if self.theme in names else names[0]
        self.notify(f"Theme: {self.theme}", timeout=2)

    # --- start-up probes ------------------------------------------------------------------

    @work(group="probe")
    async def probe_ollama(self) -> None:
        await self.reprobe()
        await self.engine.warm_up()   # keyword-only sessions need the engine too

    async def reprobe(self) -> bool:
        """Ask Ollama again (start-up, and before a query while it was down); True when it answers."""
        from ragtui.ollama_api import OllamaUnreachable

        try:
            status = await self.engine.probe()
        except OllamaUnreachable as exc:
            self.show_probe(OllamaProbed(self.settings.ollama.host, error=str(exc)))
            return False
        self.show_probe(OllamaProbed(status.host, status.version, status.models))
        return True

    @on(OllamaProbed)
    def show_probe(self, message: OllamaProbed) -> None:
        from ragtui.ollama_api import has_model

        status = self.query_one(StatusLine)
        synthesis = self.query_one(SynthesisView)
        self.ollama_up = not message.error
        self.ollama_problem = message.error
        if message.error:
            status.update_state(reachable=False)
            synthesis.note(f"{message.error}\nUntil it is: keyword-only retrieval, no annotation and no answer.",
                           "error")
            return
        llm = self.settings.llm
        wanted = [m for m in dict.fromkeys([llm.model, llm.annotator, self.settings.embed.model]) if m]
        missing = tuple(m for m in wanted if not has_model(message.models, m))
        status.update_state(reachable=True, missing_models=missing)
        if missing:
            synthesis.note("Not pulled on this Ollama: " + ", ".join(missing) + ". Run "
                           + "; ".join(f"`ollama pull {m}`" for m in missing), "warning")
        elif not llm.model:
            synthesis.note("No synthesis model set: set llm.model in ~/.config/ragtui/config.toml.", "warning")

    @work(group="probe")
    async def check_wordnet(self) -> None:
        try:
            on_, reason = await self.engine.wordnet_state()
        except Exception as exc:  # a broken wn database must not stop the app; say so instead
            on_, reason = False, str(exc)
        self.query_one(StatusLine).update_state(wordnet=on_, wordnet_reason=reason)

    @work(group="collections", exclusive=True)
    async def load_collections(self) -> None:
        pane = self.query_one(CollectionsPane)
        try:
            views = await self.engine.collections()
        except Exception as exc:  # shown in the pane: the rest of the app still works
            pane.set_note(f"Collections unavailable:\n{exc}")
            return
        self.show_collections(views)

    def show_collections(self, views: list[CollectionInfo], active: set[str] | None = None) -> None:
        """Render the collections; by default every non-empty one is active the first time."""
        known = {v.name for v in views}
        if active is not None:
            self.active = active & known
        elif not self.collection_views:
            self.active = {v.name for v in views if v.chunks}
        else:
            self.active &= known
        self.collection_views = views
        self.query_one(CollectionsPane).set_collections(views, self.active)
        sources = self.query_one(SourcesPanel)
        if not views and not sources.sources:
            sources.clear("No collections yet: press i to ingest a folder, or n to create a collection.")
        self._show_active()

    @on(CollectionToggled)
    def _toggled(self, message: CollectionToggled) -> None:
        (self.active.add if message.active else self.active.discard)(message.name)
        self._show_active()

    def _show_active(self) -> None:
        names = ", ".join(sorted(self.active)) or "no collection active"
        self.query_one(QueryInput).border_title = f"Query · {names}"

    def action_toggle_collections(self) -> None:
        pane = self.query_one("#collections-pane")
        self.collections_shown = not pane.display
        self._layout(self.size.width)
        if self.collections_shown:
            self.query_one("#collections").focus()

    # --- research ----------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return any(w.group == RESEARCH and w.is_running for w in self.workers)

    def action_focus_query(self) -> None:
        """Focus the query bar with its text selected, so typing starts a new query and arrows edit the old."""
        query = self.query_one(QueryInput)
        query.focus()
        query.select_all()

    @on(Input.Submitted, "#query")
    def _submitted(self, event: Input.Submitted) -> None:
        query = event.value.strip()
        if not query:
            return
        if not self.active:
            self.notify("No active collection: show the collections pane (b) and toggle one with space.",
                        severity="warning")
            return
        self.query_one(QueryInput).remember(query)
        self.run_research(query, sorted(self.active))
        self.query_one(SourcesPanel).active_table.focus()

    @work(group=RESEARCH, exclusive=True)
    async def run_research(self, query: str, collections: list[str]) -> None:
        """A new session; while Ollama is down the engine answers keyword-only (no annotation, no answer)."""
        await self.query_one(SynthesisView).reset("")
        self.query_one(SourcesPanel).clear("Retrieving …")
        previous, self.session = self.session, None
        if previous is not None:
            await previous.aclose()
        if not self.ollama_up:
            await self.reprobe()
        self.session = await self.engine.new_session(query, collections)
        await self.consume(self.session.run())

    async def consume(self, events: AsyncIterator[Event]) -> None:
        """Render a stream of engine events; on cancel or failure, leave the screen in a truthful state."""
        try:
            async for event in events:
                await self.render_event(event)
        except asyncio.CancelledError:
            await self._cancelled()
            raise
        except Exception as exc:  # an engine bug or an unexpected store error: show it, keep the app alive
            await self.query_one(SynthesisView).stop_stream()
            self.query_one(SynthesisView).note(f"Failed: {type(exc).__name__}: {exc}", "error")
            self.notify(f"{type(exc).__name__}: {exc}", severity="error", timeout=10)

    async def _cancelled(self) -> None:
        if not self.query(SynthesisView):  # the app is shutting down: nothing left to update
            return
        synthesis = self.query_one(SynthesisView)
        await synthesis.stop_stream()
        sources = self.query_one(SourcesPanel)
        if self.session is not None:
            sources.set_sources(self.session.sources, sources.empty_note)  # the session marked what it cut
        for number, source in list(sources.sources.items()):
            if source.state is AnnotationState.RUNNING:
                sources.set_state(number, AnnotationState.PENDING)
        synthesis.note("Cancelled. s writes the answer again, R re-annotates.", "warning")
        self.query_one(StatusLine).update_state(activity="cancelled")

    async def render_event(self, event: Event) -> None:
        """Show one engine event in the panes it concerns."""
        sources = self.query_one(SourcesPanel)
        synthesis = self.query_one(SynthesisView)
        status = self.query_one(StatusLine)
        match event:
            case Notice(level=level, message=message):
                self.notify(message, severity="information" if level == "info" else level, timeout=8)
            case RetrievalStarted(collections=collections):
                status.update_state(activity=f"retrieving from {', '.join(collections)}")
            case SourcesReady(sources=found, meta=meta, keyword_only=keyword_only):
                note = "" if found else "No hits: nothing in the active collections matches this query."
                sources.set_sources(found, note)
                status.update_state(keyword_only=keyword_only, retrieval=describe_retrieval(meta),
                                    activity=f"{len(found)} sources")
                if not found:
                    synthesis.note(note, "warning")
            case AnnotationStarted(number=n):
                sources.set_state(n, AnnotationState.RUNNING)
                status.update_state(activity="annotating")
            case AnnotationFinished(number=n, text=text, relevant=relevant):
                sources.set_state(n, AnnotationState.RELEVANT if relevant else AnnotationState.IRRELEVANT, text)
            case AnnotationFailed(number=n, error=error):
                sources.set_state(n, AnnotationState.FAILED, error=error)
            case SynthesisStarted(model=model, continuation=continuation):
                await synthesis.begin(model, continuation)
                status.update_state(activity="writing the answer")
            case SynthesisToken(text=text):
                await synthesis.write(text)
            case SynthesisFinished(text=text, stop_reason=reason, unknown_citations=unknown):
                await synthesis.finish(text, reason, set(sources.sources), unknown)
                status.update_state(activity=f"answer: {reason}")
            case StageFailed(stage=stage, message=message):
                self.notify(f"{stage} failed: {message}", severity="error", timeout=10)
                if stage == "synthesize":
                    synthesis.note(f"Synthesis failed: {message}", "error")
                elif stage == "retrieve":
                    sources.clear(f"Retrieval failed: {message}")
            case SessionSaved(session_id=session_id):
                status.update_state(activity=f"saved as session {session_id}")

    def _session_or_say(self) -> Any:
        if self.session is None:
            self.notify("No session yet: run a query first (/).", severity="warning")
            return None
        if self.busy:
            self.notify("Still working: wait, or press esc to cancel.", severity="warning")
            return None
        return self.session

    @work(group=RESEARCH, exclusive=True)
    async def _follow(self, events: AsyncIterator[Event]) -> None:
        await self.consume(events)

    def action_continue_answer(self) -> None:
        session = self._session_or_say()
        if session is None:
            return
        if not session.truncated:
            self.notify("The answer is complete: nothing to continue.")
            return
        self._follow(session.continue_answer())

    def action_synthesize(self) -> None:
        session = self._session_or_say()
        if session is not None:
            self._follow(session.synthesize())

    def action_reannotate_selected(self) -> None:
        session = self._session_or_say()
        source = self.query_one(SourcesPanel).selected()
        if session is None or source is None:
            return
        self._follow(session.reannotate([source.number]))

    def action_reannotate_all(self) -> None:
        session = self._session_or_say()
        if session is not None:
            self._follow(session.reannotate())

    def action_toggle_source(self) -> None:
        session = self._session_or_say()
        panel = self.query_one(SourcesPanel)
        source = panel.selected()
        if session is None or source is None:
            return
        if source.filtered:
            session.rescue(source.number)
            verb = "Rescued"
        else:
            session.drop(source.number)
            verb = "Dropped"
        panel.set_sources(session.sources)
        self.notify(f"{verb} [{source.number}]. Press s to write the answer again with it.", timeout=4)

    def action_cancel(self) -> None:
        """Cancel running work; with nothing running, esc leaves the query bar for the sources."""
        if self.busy:
            self.workers.cancel_group(self, RESEARCH)
        elif self.screen.focused is self.query_one(QueryInput):
            self.query_one(SourcesPanel).active_table.focus()

    # --- sources, citations, copying ------------------------------------------------------------

    @on(SourceChosen)
    def _chosen(self, message: SourceChosen) -> None:
        self.open_source(message.source)

    @on(CitationClicked)
    def _cited(self, message: CitationClicked) -> None:
        source = self.query_one(SourcesPanel).sources.get(message.number)
        if source is not None:
            self.open_source(source)

    @work(group="viewer", exclusive=True)
    async def open_source(self, source: Any) -> None:
        from ragtui.tui.screens.source_viewer import SourceViewer

        document = await self.engine.document(source)
        await self.push_screen(SourceViewer(source, document, cursor_blink=self.cursor_blink))

    def copy_text(self, text: str, what: str) -> None:
        """OSC 52 to the terminal's clipboard (wrapped inside tmux), and the same text saved to a file."""
        self._clipboard = text
        if self._driver is not None:
            self._driver.write(osc52(text, in_tmux=self.in_tmux))
        try:
            path = save_copy(text, self.settings.data_dir)
        except OSError as exc:
            self.notify(f"Copied {what} (OSC 52); saving a copy failed: {exc.strerror}", severity="warning")
            return
        self.notify(f"Copied {what} ({len(text)} chars, OSC 52); also saved to {path}", timeout=6)

    def copy_to_clipboard(self, text: str) -> None:
        self.copy_text(text, "selection")

    def action_copy_answer(self) -> None:
        text = self.query_one(SynthesisView).text
        if not text:
            self.notify("No answer to copy yet.", severity="warning")
            return
        self.copy_text(text, "the answer")

    def action_copy_source(self) -> None:
        source = self.query_one(SourcesPanel).selected()
        if source is None:
            self.notify("No source selected.", severity="warning")
            return
        self.copy_text(source.chunk.text, f"source [{source.number}]")

    # --- screens -----------------------------------------------------------------------------

    def action_help(self) -> None:
        from ragtui.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen())

    @work(group="history", exclusive=True)
    async def action_history(self) -> None:
        from ragtui.tui.screens.history import HistoryScreen

        try:
            sessions = await self.engine.history()
        except Exception as exc:  # shown, not raised: history is optional to the rest of the app
            self.notify(f"History unavailable: {exc}", severity="error")
            return
        chosen = await self.push_screen_wait(HistoryScreen(sessions))
        if chosen is not None:
            await self.reopen(chosen)

    async def reopen(self, session_id: int) -> None:
        """Show a stored session as it was left, ready for re-annotation or continuation."""
        if self.busy:
            self.workers.cancel_group(self, RESEARCH)
        session = await self.engine.reopen(session_id)
        self.session = session
        self.query_one(QueryInput).value = session.query
        self.query_one(SourcesPanel).set_sources(session.sources, "This session had no sources.")
        synthesis = self.query_one(SynthesisView)
        await synthesis.reset()
        known = {s.number for s in session.sources}
        await synthesis.finish(session.answer, session.stop_reason or "", known)
        self.query_one(StatusLine).update_state(activity=f"reopened session {session_id}",
                                                retrieval=describe_retrieval(session.meta))

    @work(group="ingest-dialog", exclusive=True)
    async def action_ingest(self, path: Path | None = None, collection: str = "") -> None:
        """The ingest screen; given a path and collection it starts at once."""
        from ragtui.tui.screens.ingest import IngestScreen

        names = [v.name for v in self.collection_views]
        default = collection or (sorted(self.active)[0] if self.active else (names[0] if names else ""))
        screen = IngestScreen(names, default, str(path or ""), start=path is not None)
        changed = await self.push_screen_wait(screen)
        if changed:
            self.load_collections()

    @work(group="new-collection", exclusive=True)
    async def action_new_collection(self) -> None:
        from ragtui.tui.screens.new_collection import NewCollectionScreen

        result = await self.push_screen_wait(NewCollectionScreen({v.name for v in self.collection_views}))
        if result is None:
            return
        name, topic = result
        try:
            await self.engine.create_collection(name, topic)
        except Exception as exc:  # e.g. the registry refused the name: tell the user, keep going
            self.notify(f"Could not create {name}: {exc}", severity="error")
            return
        self.notify(f"Created collection {name}. Press i to ingest into it.")
        self.active.add(name)
        self.load_collections()

    # --- spinner ----------------------------------------------------------------------------

    def _spin(self) -> None:
        for sources in self.query(SourcesPanel):  # none while the app shuts down
            if sources.running:
                sources.tick()


def run_app(settings: Settings, ingest_on_start: tuple[Path, str] | None = None) -> int:
    """Open the TUI; the one place that looks at $TMUX (for OSC 52 passthrough)."""
    app = RagtuiApp(settings, in_tmux=bool(os.environ.get("TMUX")), ingest_on_start=ingest_on_start)
    try:
        app.run()
    finally:
        app.engine.close()
    return 0
