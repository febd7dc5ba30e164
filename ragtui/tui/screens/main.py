"""The research view: collections, query, sources and synthesis panes, a status line and a footer.

Typing is safe: the query bar keeps the focus after enter (its text selected, so the
next question replaces it), and the panes' one-letter actions only run where the
focus is on a pane (tab, or esc, moves there). Below 150 columns the panes are
stacked and the one in use (`expanded`: the focused pane, or the answer while it
streams) gets the room; the other keeps a few lines, one key (tab) away.

Everything slow (the Ollama probe, retrieval, annotation, synthesis, loading the
engine's heavy modules) runs in workers. A research worker never draws: it posts
each engine event to this screen as a message (ragtui.tui.messages.Research), and
the @on handlers below render them one after another, in the order they came.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Container, Horizontal, Vertical
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Input

from ragtui.config import Settings
from ragtui.errors import RagtuiError, describe
from ragtui.events import Event, NoticeLevel
from ragtui.library import CollectionInfo
from ragtui.model import AnnotationState, SessionSource
from ragtui.tui import keymap
from ragtui.tui.engine import Engine
from ragtui.tui.messages import (
    CitationClicked,
    CollectionToggled,
    CopyRequested,
    OllamaProbed,
    Research,
    SourceChosen,
    research_message,
)
from ragtui.tui.widgets.collections import CollectionsPane
from ragtui.tui.widgets.query import QueryInput
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.status import StatusLine
from ragtui.tui.widgets.synthesis import SynthesisView
from ragtui.tui.widgets.turns import TurnBar

if TYPE_CHECKING:
    from ragtui.history import Turn
    from ragtui.research import ResearchSession
    from ragtui.retrieve.result import RetrievalMeta

RESEARCH = "research"    # worker group of everything that talks to the LLM or the stores for a session
COLLECTIONS_POLL_S = 5.0  # how often the collections pane checks whether another process changed a collection
# The screen's class by terminal width (app.tcss): below 100 columns the collections pane hides (b shows it),
# from 150 sources and answer sit side by side.
WIDTH_CLASSES = [(0, "-narrow"), (100, "-medium"), (150, "-wide")]
SEVERITY: dict[NoticeLevel, SeverityLevel] = {"info": "information", "warning": "warning", "error": "error"}


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


def answer_with_sources(answer: str, sources: Mapping[int, SessionSource]) -> str:
    """The answer followed by the numbered list of the sources it cites, so a pasted [N] still resolves."""
    from ragtui.llm.citations import cited_numbers

    cited = [n for n in cited_numbers(answer) if n in sources]
    if not cited:
        return answer
    listing = "\n".join(f"[{n}] {sources[n].chunk.label}" for n in sorted(cited))
    return f"{answer.rstrip()}\n\nSources:\n{listing}\n"


class MainScreen(Screen[None]):
    BINDINGS: ClassVar = keymap.bindings("main")
    HORIZONTAL_BREAKPOINTS = WIDTH_CLASSES

    active: reactive[frozenset[str]] = reactive(frozenset())   # the collections a query searches
    collections_shown: reactive[bool | None] = reactive(None)  # b's choice; None: the width decides
    turns: reactive[int] = reactive(0)     # turns of the conversation a submitted query follows up; 0: a new one
    expanded: reactive[str] = reactive("sources")              # the stacked pane with the room: sources or answer

    def __init__(self, settings: Settings, engine: Engine, *, cursor_blink: bool = True, start_workers: bool = True,
                 ingest_on_start: tuple[Path, str] | None = None) -> None:
        """`start_workers=False` skips the start-up probes (tests set the state); `ingest_on_start`
        (path, collection) opens the ingest screen and starts it."""
        super().__init__()
        self.settings = settings
        self.engine = engine
        self.cursor_blink = cursor_blink
        self.start_workers = start_workers
        self.ingest_on_start = ingest_on_start
        self.session: ResearchSession | None = None
        self.collection_views: list[CollectionInfo] = []
        self.ollama_models: tuple[str, ...] = ()   # as the last probe listed them (the model picker offers them)
        self.viewed_turn = 0                       # the turn the panes show (1-based; 0 before any)
        self.last_meta: RetrievalMeta | None = None
        self.history_damage = ""                   # why the history cannot be used (sessions then run unsaved)
        self.collections_stamp: object = None      # the collections as the last poll saw them (poll_collections)

    # --- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield CollectionsPane(id="collections-pane")
            with Vertical(id="work"):
                yield QueryInput(id="query")
                yield TurnBar(id="turn-bar")
                with Container(id="results"):
                    yield SourcesPanel(self.settings.annotation.irrelevant_pattern, id="sources")
                    yield SynthesisView(id="synthesis")
        llm = self.settings.llm
        yield StatusLine(self.settings.ollama.host, llm.model, llm.annotator, id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        query = self.query_one(QueryInput)
        query.cursor_blink = self.cursor_blink
        query.focus()
        if self.start_workers:
            self.app.call_after_refresh(self._start_background)

    def _start_background(self) -> None:
        self.probe_ollama()
        self.load_collections()
        self.set_interval(COLLECTIONS_POLL_S, self.poll_collections)
        self.check_wordnet()
        self.check_history()
        if self.ingest_on_start is not None:
            self.action_ingest(*self.ingest_on_start)

    def watch_collections_shown(self, shown: bool | None) -> None:
        self.set_class(shown is True, "-collections-shown")
        self.set_class(shown is False, "-collections-hidden")

    def watch_expanded(self, expanded: str) -> None:
        self.set_class(expanded == "sources", "-sources-first")
        self.set_class(expanded == "answer", "-answer-first")

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """The pane that takes the focus takes the room."""
        if self._within(event.widget, SourcesPanel):
            self.expanded = "sources"
        elif self._within(event.widget, SynthesisView):
            self.expanded = "answer"

    @staticmethod
    def _within(widget: Widget, kind: type[Widget]) -> bool:
        return isinstance(widget, kind) or any(isinstance(a, kind) for a in widget.ancestors)

    def action_show_tab(self, tab: str) -> None:
        """1 2 3: the Relevant, Filtered or All tab of the sources."""
        self.query_one(SourcesPanel).show_tab(tab)
        self.expanded = "sources"

    def action_toggle_collections(self) -> None:
        self.collections_shown = not self.query_one(CollectionsPane).display
        if self.collections_shown:
            self.query_one("#collections").focus()

    # --- start-up probes ------------------------------------------------------------------

    @work(group="probe")
    async def probe_ollama(self) -> None:
        await self.reprobe()
        await self.engine.warm_up()   # keyword-only sessions need the engine too
        await self.engine.prepare(sorted(self.active))   # the first query then skips the stores' cold loads

    async def reprobe(self) -> None:
        """Ask Ollama again (start-up, and before a query while it was down)."""
        from ragtui.ollama_api import OllamaUnreachable

        try:
            status = await self.engine.probe()
        except OllamaUnreachable as exc:
            self.post_message(OllamaProbed(error=str(exc)))
            return
        self.post_message(OllamaProbed(status.models))

    @on(OllamaProbed)
    def _probed(self, message: OllamaProbed) -> None:
        from ragtui.ollama_api import has_model

        status = self.query_one(StatusLine)
        synthesis = self.query_one(SynthesisView)
        status.reachable = not message.error
        self.ollama_models = message.models
        if message.error:
            synthesis.note(f"{message.error}\nUntil it is: keyword-only retrieval, no annotation and no answer.",
                           "error")
            return
        llm = self.settings.llm
        wanted = [m for m in dict.fromkeys([llm.model, llm.annotator, self.settings.embed.model]) if m]
        status.missing_models = missing = tuple(m for m in wanted if not has_model(message.models, m))
        if missing:
            synthesis.note("Not pulled on this Ollama: " + ", ".join(missing) + ". Run "
                           + "; ".join(f"`ollama pull {m}`" for m in missing), "warning")
        elif not llm.model:
            from ragtui.config import user_config_path

            synthesis.note(f"No synthesis model set: set llm.model in {user_config_path()}.", "warning")

    @work(group="probe")
    async def check_wordnet(self) -> None:
        try:
            on_, reason = await self.engine.wordnet_state()
        except Exception as exc:  # a broken wn database must not stop the app; say so instead
            on_, reason = False, describe(exc)
        status = self.query_one(StatusLine)
        status.wordnet, status.wordnet_reason = on_, reason

    @work(group="probe")
    async def check_history(self) -> None:
        """A damaged history file is said once at start-up; queries still run, unsaved, and `h` stays shut."""
        try:
            damage = await self.engine.history_damage()
        except Exception as exc:  # e.g. a history from a newer ragtui: the same, history is optional
            damage = describe(exc)
        if damage:
            self._history_unusable(damage)

    def _history_unusable(self, damage: str) -> None:
        if not self.history_damage:
            self.history_damage = damage
            self.notify(f"History unavailable, sessions are not saved: {damage}", severity="error", timeout=30)

    # --- collections ----------------------------------------------------------------------

    @work(group="collections", exclusive=True)
    async def load_collections(self) -> None:
        pane = self.query_one(CollectionsPane)
        try:
            views = await self.engine.collections()
        except Exception as exc:  # shown in the pane: the rest of the app still works
            pane.set_note(f"Collections unavailable:\n{describe(exc)}")
            return
        if not pane.is_attached:   # the app quit while the list was loading: nothing left to show it in
            return
        self.show_collections(views)

    @work(group="collections-poll", exclusive=True)
    async def poll_collections(self) -> None:
        """Reload the collections pane when a collection changed behind it (another process ingested into it,
        deleted or created one): its stamp is a stat and a folder listing per collection."""
        try:
            stamp = await self.engine.collections_stamp()
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
        sources = self.query_one(SourcesPanel)
        if not sources.sources:
            sources.clear("No collections yet: esc, then i ingests a folder or n creates a collection." if not views
                          else "No query yet: type a question and press enter.")

    def watch_active(self, active: frozenset[str]) -> None:
        self._title_query()
        self.query_one(CollectionsPane).show_active(active)

    def watch_turns(self) -> None:
        self._title_query()

    def _title_query(self) -> None:
        """`Query · collections`, or `Follow-up (turn N) · collections` while a conversation goes on."""
        if self.turns and self.session is not None:
            names = ", ".join(self.session.collections)
            title = f"Follow-up (turn {self.turns + 1}) · {names} · N: new session"
        else:
            title = f"Query · {', '.join(sorted(self.active)) or 'no collection active'}"
        self.query_one(QueryInput).border_title = title

    def _sync_conversation(self) -> None:
        """A session with an answer takes follow-ups: the query bar says so."""
        session = self.session
        self.turns = len(session.turns) if session is not None and any(t.answer.strip() for t in session.turns) \
            else 0
        self._title_query()

    @on(CollectionToggled)
    def _toggled(self, message: CollectionToggled) -> None:
        self.active ^= {message.name}

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
        bar = self.query_one(QueryInput)
        bar.remember(query)
        bar.select_all()   # the focus stays here: typing the next question replaces this one
        self.expanded = "sources"
        if self.turns and self.session is not None and not self.busy:
            self.run_follow_up(self.session, query)
        else:
            self.run_research(query, sorted(self.active))

    @work(group=RESEARCH, exclusive=True)
    async def run_research(self, query: str, collections: list[str]) -> None:
        """A new session; while Ollama is down the engine answers keyword-only (no annotation, no answer)."""
        self.post_message(Research.Started())
        previous, self.session = self.session, None
        if previous is not None:
            await previous.aclose()
        if not self.query_one(StatusLine).reachable:
            await self.reprobe()
        self.session = await self.engine.new_session(query, collections)
        await self.consume(self.session.run())

    @work(group=RESEARCH, exclusive=True)
    async def run_follow_up(self, session: ResearchSession, question: str) -> None:
        """The next turn of the conversation: rewritten, retrieved twice, answered with the earlier turns."""
        self.post_message(Research.Started())
        await self.consume(session.follow_up(question))

    @work(group=RESEARCH, exclusive=True)
    async def run_revised(self, session: ResearchSession, rewrite: str) -> None:
        self.post_message(Research.Started())
        await self.consume(session.revise_rewrite(rewrite))

    async def consume(self, events: AsyncIterator[Event]) -> None:
        """Post a stream of engine events to this screen; a cancel or a failure is posted after them."""
        try:
            async for event in events:
                self.post_message(research_message(event))
        except asyncio.CancelledError:
            self.post_message(Research.Cancelled())
            raise
        except Exception as exc:  # an engine bug or an unexpected store error: show it, keep the app alive
            self.post_message(Research.Failed(exc))

    @on(Research.Started)
    async def _started(self) -> None:
        await self.query_one(SynthesisView).reset("")
        sources = self.query_one(SourcesPanel)
        sources.query_words = tuple(self.query_one(QueryInput).value.split())
        sources.clear("Retrieving …")

    @on(Research.Cancelled)
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
        self._status("cancelled", "(finished work kept)")

    @on(Research.Failed)
    async def _failed(self, message: Research.Failed) -> None:
        error = describe(message.error)
        synthesis = self.query_one(SynthesisView)
        await synthesis.stop_stream()
        synthesis.note(f"Failed: {error}", "error")
        self._status("failed")
        self.notify(error, severity="error", timeout=10)

    @on(Research.Notice)
    def _notice(self, message: Research.Notice) -> None:
        self.notify(message.event.message, severity=SEVERITY[message.event.level], timeout=8)

    @on(Research.RetrievalStarted)
    def _retrieving(self, message: Research.RetrievalStarted) -> None:
        self._status("retrieving", f"from {', '.join(message.event.collections)}")

    @on(Research.RewriteReady)
    def _rewritten(self, message: Research.RewriteReady) -> None:
        event = message.event
        turn = self.session.turns.index(self.session.turn) + 1 if self.session is not None else 2
        self.query_one(TurnBar).show_turn(turn, turn, event.question, event.rewrite, event.by)

    @on(Research.SourcesReady)
    def _sources_ready(self, message: Research.SourcesReady) -> None:
        self.viewed_turn = message.event.turn
        self.last_meta = message.event.meta
        if self.session is not None and message.event.turn > 1:
            self._show_turn_bar(self.session, message.event.turn)
        elif message.event.turn == 1:
            self.query_one(TurnBar).hide()
        found = message.event.sources
        note = "" if found else "No hits: nothing in the active collections matches this query."
        self.query_one(SourcesPanel).use = {}
        self.query_one(SourcesPanel).set_sources(found, note)
        status = self.query_one(StatusLine)
        status.keyword_only = message.event.keyword_only
        status.retrieval = describe_retrieval(message.event.meta)
        status.state, status.activity = "retrieved", f"{len(found)} sources"
        if not found:
            self.query_one(SynthesisView).note(note, "warning")

    @on(Research.AnnotationStarted)
    def _annotating(self, message: Research.AnnotationStarted) -> None:
        sources = self.query_one(SourcesPanel)
        sources.set_state(message.event.number, AnnotationState.RUNNING)
        self._annotation_progress(sources)

    @on(Research.AnnotationFinished)
    def _annotated(self, message: Research.AnnotationFinished) -> None:
        event = message.event
        state = AnnotationState.RELEVANT if event.relevant else AnnotationState.IRRELEVANT
        sources = self.query_one(SourcesPanel)
        sources.set_state(event.number, state, event.text)
        self._annotation_progress(sources)

    @on(Research.AnnotationFailed)
    def _annotation_failed(self, message: Research.AnnotationFailed) -> None:
        sources = self.query_one(SourcesPanel)
        sources.set_state(message.event.number, AnnotationState.FAILED, error=message.event.error)
        self._annotation_progress(sources)

    def _annotation_progress(self, sources: SourcesPanel) -> None:
        waiting = sum(s.state in (AnnotationState.PENDING, AnnotationState.RUNNING) for s in sources.sources.values())
        self._status("annotating", f"{len(sources.sources) - waiting}/{len(sources.sources)}")

    def _status(self, state: str, activity: str = "") -> None:
        status = self.query_one(StatusLine)
        status.state, status.activity = state, activity

    @on(Research.SynthesisStarted)
    async def _writing(self, message: Research.SynthesisStarted) -> None:
        event = message.event
        self.query_one(SourcesPanel).set_use(event.numbers, event.windowed, event.left_out)
        await self.query_one(SynthesisView).begin(event.model, event.continuation)
        self._status("writing", f"with {event.model}")
        if not self._within(self.focused or self, SourcesPanel):
            self.expanded = "answer"   # the answer takes the room while it streams, unless the sources are in use

    @on(Research.SynthesisToken)
    async def _token(self, message: Research.SynthesisToken) -> None:
        await self.query_one(SynthesisView).write(message.event.text)

    @on(Research.SynthesisFinished)
    async def _written(self, message: Research.SynthesisFinished) -> None:
        event = message.event
        known = set(self.query_one(SourcesPanel).sources)
        await self.query_one(SynthesisView).finish(event.text, event.stop_reason, known, event.unknown_citations,
                                                   event.quotes)
        state = {"stop": "done", "cancelled": "cancelled", "error": "failed"}.get(event.stop_reason, "done")
        self._status(state, "" if event.stop_reason == "stop" else f"(answer: {event.stop_reason})")
        self._sync_conversation()

    @on(Research.StageFailed)
    def _stage_failed(self, message: Research.StageFailed) -> None:
        stage, text = message.event.stage, message.event.message
        self.notify(f"{stage} failed: {text}", severity="error", timeout=10)
        self._status("failed", f"({stage})")
        if stage == "synthesize":
            self.query_one(SynthesisView).note(f"Synthesis failed: {text}", "error")
        elif stage == "retrieve":
            self.query_one(SourcesPanel).clear(f"Retrieval failed: {text}")

    @on(Research.SessionSaved)
    def _saved(self, message: Research.SessionSaved) -> None:
        status = self.query_one(StatusLine)
        if status.state in ("retrieving", "retrieved", "annotating", "writing"):
            status.state = "done"
        if message.event.not_saved:
            self._history_unusable(message.event.not_saved)
            status.activity = "not saved: the history file is damaged (! shows why)"
        else:
            status.activity = f"saved as session {message.event.session_id}"
        self._sync_conversation()

    def _session_or_say(self) -> ResearchSession | None:
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
        panel.set_sources(self._viewed(session).sources)
        self.notify(f"{verb} [{source.number}]. Press s to write the answer again with it.", timeout=4)

    def action_cancel(self) -> None:
        """Cancel running work; with nothing running, esc leaves the query bar for the sources."""
        if self.busy:
            self.workers.cancel_group(self, RESEARCH)
        elif self.focused is self.query_one(QueryInput):
            self.query_one(SourcesPanel).active_table.focus()

    # --- sources, citations, copying ------------------------------------------------------------

    @on(SourceChosen)
    def _chosen(self, message: SourceChosen) -> None:
        self.open_source(message.source)

    @on(CitationClicked)
    def _cited(self, message: CitationClicked) -> None:
        source = self.query_one(SourcesPanel).sources.get(message.number)
        if source is None and self.session is not None:   # an earlier turn's source, cited in its answer
            try:
                source = self.session.source(message.number)
            except KeyError:
                source = None
        if source is not None:
            self.open_source(source)

    @work(group="viewer", exclusive=True)
    async def open_source(self, source: SessionSource) -> None:
        from ragtui.tui.screens.source_viewer import SourceViewer

        document = await self.engine.document(source)
        await self.app.push_screen(SourceViewer(source, document, query=self._asked(source),
                                                cursor_blink=self.cursor_blink, details=self._details(source)))

    def action_copy_answer(self) -> None:
        text = self.query_one(SynthesisView).text
        if not text:
            self.notify("No answer to copy yet.", severity="warning")
            return
        self.post_message(CopyRequested(answer_with_sources(text, self.query_one(SourcesPanel).sources),
                                        "the answer"))

    def action_copy_source(self) -> None:
        source = self.query_one(SourcesPanel).selected()
        if source is None:
            self.notify("No source selected.", severity="warning")
            return
        self.post_message(CopyRequested(source.chunk.text, f"source [{source.number}]"))

    # --- conversations: turns, rewrites, why, re-annotation with another model ------------------

    def _viewed(self, session: ResearchSession) -> Turn:
        """The turn the panes show (the latest when none was chosen)."""
        index = self.viewed_turn if 1 <= self.viewed_turn <= len(session.turns) else len(session.turns)
        return session.turns[index - 1]

    def _show_turn_bar(self, session: ResearchSession, index: int) -> None:
        turn = session.turns[index - 1]
        self.query_one(TurnBar).show_turn(index, len(session.turns), turn.query, turn.rewrite, turn.rewrite_by)

    async def _show_turn(self, step: int) -> None:
        session = self._session_or_say()
        if session is None:
            return
        index = (self.viewed_turn or len(session.turns)) + step
        if not 1 <= index <= len(session.turns):
            self.notify("No earlier turn." if step < 0 else "This is the latest turn.")
            return
        self.viewed_turn = index
        turn = session.turns[index - 1]
        self.query_one(SourcesPanel).set_sources(turn.sources, "This turn had no sources.")
        synthesis = self.query_one(SynthesisView)
        await synthesis.reset()
        await synthesis.finish(turn.answer, turn.stop_reason, {s.number for s in turn.sources},
                               tuple(turn.unknown_citations), session.quote_checks(turn))
        self._show_turn_bar(session, index)
        self.query_one(StatusLine).retrieval = describe_retrieval(turn.retrieval_meta)

    async def action_earlier_turn(self) -> None:
        await self._show_turn(-1)

    async def action_later_turn(self) -> None:
        await self._show_turn(1)

    async def action_new_session(self) -> None:
        """Forget the conversation: the next query starts a fresh session (the old one stays in the history)."""
        if self.busy:
            self.notify("Still working: wait, or press esc to cancel.", severity="warning")
            return
        previous, self.session = self.session, None
        if previous is not None:
            await previous.aclose()
        self.viewed_turn = 0
        self._sync_conversation()
        self.query_one(TurnBar).hide()
        self.query_one(SourcesPanel).clear("New session: type a question and press enter.")
        await self.query_one(SynthesisView).reset("")
        self.action_focus_query()

    def _asked(self, source: SessionSource) -> str:
        """The question `source` was annotated against: its turn's rewrite, or the question as typed."""
        session = self.session
        if session is None:
            return ""
        try:
            turn = session.turns[session.turn_of(source.number) - 1]
        except KeyError:
            return session.query
        return turn.rewrite or turn.query

    def _details(self, source: SessionSource) -> list[str]:
        """The engine's explanation of how `source` was found, for its turn."""
        from ragtui.retrieve.explain import details

        session = self.session
        try:
            turn = session.turns[session.turn_of(source.number) - 1] if session is not None else None
        except KeyError:
            turn = None
        if turn is None:
            return details(self.last_meta, [source])
        return details(turn.retrieval_meta, [source], rewrite=turn.rewrite, rewrite_meta=turn.rewrite_meta)

    def action_details(self) -> None:
        from ragtui.tui.screens.details import DetailsScreen

        source = self.query_one(SourcesPanel).selected()
        if source is None:
            self.notify("No source selected.", severity="warning")
            return
        self.app.push_screen(DetailsScreen(f"Why [{source.number}] {source.chunk.label}", self._details(source)))

    @work(group="rewrite-dialog", exclusive=True)
    async def action_edit_rewrite(self) -> None:
        from ragtui.tui.screens.rewrite import RewriteScreen

        session = self._session_or_say()
        if session is None:
            return
        if len(session.turns) < 2:
            self.notify("Only a follow-up has a rewrite: ask one first.", severity="warning")
            return
        text = await self.app.push_screen_wait(RewriteScreen(session.turn.query, session.turn.rewrite))
        if text:
            self.run_revised(session, text)

    @work(group="model-picker", exclusive=True)
    async def action_reannotate_with(self) -> None:
        from ragtui.tui.screens.model_picker import ModelPickerScreen

        session = self._session_or_say()
        if session is None:
            return
        source = self.query_one(SourcesPanel).selected()
        current = session.record.annotation_model or self.settings.llm.annotator
        embedders = set(self.settings.embed.all_models)     # listed by Ollama, but they cannot annotate
        models = [name for m in self.ollama_models if (name := m.removesuffix(":latest")) not in embedders] \
            or [current]
        choice = await self.app.push_screen_wait(ModelPickerScreen(models, current,
                                                                   source.number if source else None))
        if choice is None:
            return
        numbers = list(choice.numbers) if choice.numbers else [s.number for s in self._viewed(session).sources]
        self._follow(session.reannotate(numbers, model=choice.model, prompt_file=choice.prompt_file or None))

    # --- dialogs -----------------------------------------------------------------------------

    @work(group="history", exclusive=True)
    async def action_history(self) -> None:
        from ragtui.history import HistoryDamaged
        from ragtui.tui.screens.history import HistoryScreen

        if self.history_damage:
            self.notify(f"History unavailable: {self.history_damage}", severity="error")
            return
        try:
            sessions = await self.engine.history()
        except HistoryDamaged as exc:            # found damaged since start-up
            self._history_unusable(describe(exc))
            return
        except Exception as exc:  # shown, not raised: history is optional to the rest of the app
            self.notify(f"History unavailable: {describe(exc)}", severity="error")
            return
        chosen = await self.app.push_screen_wait(HistoryScreen(self.engine, sessions))
        if chosen is None:
            return
        try:
            await self.reopen(chosen)
        except RagtuiError as exc:  # e.g. the session was deleted meanwhile
            self.notify(describe(exc), severity="error")

    async def reopen(self, session_id: int) -> None:
        """Show a stored session as it was left, ready for re-annotation or continuation."""
        if self.busy:
            self.workers.cancel_group(self, RESEARCH)
        self.session = await self.engine.reopen(session_id)
        self.post_message(Research.Reopened(self.session))

    @on(Research.Reopened)
    async def _reopened(self, message: Research.Reopened) -> None:
        session = message.session
        self.viewed_turn = len(session.turns)
        self._sync_conversation()
        if len(session.turns) > 1:
            self._show_turn_bar(session, len(session.turns))
        else:
            self.query_one(TurnBar).hide()
        self.query_one(QueryInput).value = session.query
        self.query_one(SourcesPanel).set_sources(session.sources, "This session had no sources.")
        synthesis = self.query_one(SynthesisView)
        await synthesis.reset()
        known = {s.number for s in session.sources}
        await synthesis.finish(session.answer, session.stop_reason, known, tuple(session.unknown_citations),
                               session.quote_checks())
        status = self.query_one(StatusLine)
        status.state, status.activity = "ready", f"reopened session {session.id}"
        status.retrieval = describe_retrieval(session.meta)

    @work(group="ingest-dialog", exclusive=True)
    async def action_ingest(self, path: Path | None = None, collection: str = "") -> None:
        """The ingest screen; given a path and collection it starts at once."""
        from ragtui.tui.screens.ingest import IngestScreen

        names = [v.name for v in self.collection_views]
        default = collection or (sorted(self.active)[0] if self.active else (names[0] if names else ""))
        screen = IngestScreen(self.engine, default, str(path or ""), start=path is not None,
                              cursor_blink=self.cursor_blink, on_ended=self.ingest_ended)
        await self.app.push_screen_wait(screen)

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
            await self.engine.create_collection(name, topic)
        except Exception as exc:  # e.g. the registry refused the name: tell the user, keep going
            self.notify(f"Could not create {name}: {describe(exc)}", severity="error")
            return
        self.notify(f"Created collection {name}. Press i to ingest into it.")
        self.active |= {name}
        self.load_collections()
