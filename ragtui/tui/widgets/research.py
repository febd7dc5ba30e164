"""The research view: the query bar, the turn bar, the sources and the answer, and the session behind them.

It owns the research session and the workers that talk to it. A worker never
draws: it posts each engine event to this view as a message (ragtui.tui.messages.
Research), and the @on handlers below show them one after another, in the order
they came. Every event carries the snapshot it reports (a source as it now
stands, the whole answer), so the panes show what they are given and rebuild
nothing. A whole turn (turn navigation, a reopened session, the panes after a
cancel) is shown by one painter, `show_turn`, from the conversation's snapshot.

Below 150 columns the panes are stacked and the one in use (`expanded`: the
focused pane, or the answer while it streams) gets the room. The screen hands
down what the view needs from it: the active collections, the status line, the
models Ollama listed and a way to probe it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Container, Vertical
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Input

from ragtui.config import Settings
from ragtui.errors import describe
from ragtui.events import Event, NoticeLevel
from ragtui.model.conversation import AnnotationState, SessionSource, StopReason, Turn
from ragtui.model.filters import FilterError, SearchFilter, split_query
from ragtui.model.retrieval import RetrievalMeta
from ragtui.model_ids import short_name
from ragtui.tui.messages import CopyRequested, Research, research_message
from ragtui.tui.widgets.query import QueryInput
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.status import RUNNING, Activity, StatusLine, describe_retrieval
from ragtui.tui.widgets.synthesis import SynthesisView, answer_with_sources
from ragtui.tui.widgets.turns import TurnBar

if TYPE_CHECKING:
    from ragtui.tui.engine import AsyncWorkspace, ResearchSession

RESEARCH = "research"    # worker group of everything that talks to the LLM or the stores for a session
SEVERITY: dict[NoticeLevel, SeverityLevel] = {"info": "information", "warning": "warning", "error": "error"}
# How the status line words the end of an answer.
ENDED = {StopReason.STOP: Activity.DONE, StopReason.CANCELLED: Activity.CANCELLED, StopReason.ERROR: Activity.FAILED}


class ResearchView(Vertical):
    expanded: reactive[str] = reactive("sources")   # the stacked pane with the room: sources or answer
    active: reactive[frozenset[str]] = reactive(frozenset())   # the collections a new query searches (the screen's)
    turns: reactive[int] = reactive(0)     # turns of the conversation a submitted query follows up; 0: a new one

    @dataclass
    class HistoryUnusable(Message):
        """A save found the history file damaged: the session runs unsaved."""

        damage: str

    def __init__(self, settings: Settings, workspace: AsyncWorkspace, *, reprobe: Callable[[], Awaitable[None]],
                 cursor_blink: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings
        self.workspace = workspace
        self.reprobe = reprobe                     # asks Ollama again (the screen's probe)
        self.cursor_blink = cursor_blink
        self.session: ResearchSession | None = None
        self.status: StatusLine | None = None      # the screen's status line, handed down once mounted
        self.ollama_models: tuple[str, ...] = ()   # as the last probe listed them (the model picker offers them)
        self.viewed_turn = 0                       # the turn the panes show (1-based; 0 before any)
        self.last_meta: RetrievalMeta | None = None

    def compose(self) -> ComposeResult:
        yield QueryInput(id="query")
        yield TurnBar(id="turn-bar")
        with Container(id="results"):
            yield SourcesPanel(self.settings.annotation.irrelevant_pattern, id="sources")
            yield SynthesisView(id="synthesis")

    def on_mount(self) -> None:
        query = self.query_one(QueryInput)
        query.cursor_blink = self.cursor_blink
        query.focus()

    # --- the panes' room and titles -------------------------------------------------------

    def watch_expanded(self, expanded: str) -> None:
        self.set_class(expanded == "sources", "-sources-first")
        self.set_class(expanded == "answer", "-answer-first")

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """The pane that takes the focus takes the room."""
        if _within(event.widget, SourcesPanel):
            self.expanded = "sources"
        elif _within(event.widget, SynthesisView):
            self.expanded = "answer"

    def show_tab(self, tab: str) -> None:
        """The Relevant, Filtered or All tab of the sources."""
        self.query_one(SourcesPanel).show_tab(tab)
        self.expanded = "sources"

    def idle_note(self, note: str) -> None:
        """What the sources pane says while it has no sources."""
        sources = self.query_one(SourcesPanel)
        if not sources.sources:
            sources.clear(note)

    def watch_active(self) -> None:
        self._title_query()

    def watch_turns(self) -> None:
        self._title_query()

    def _title_query(self) -> None:
        """`Query · collections`, or `Follow-up (turn N) · collections` while a conversation goes on."""
        if self.turns and self.session is not None:
            names = ", ".join(self.session.conversation.collections)
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

    def _status(self, state: Activity, activity: str = "") -> None:
        if self.status is not None:
            self.status.state, self.status.activity = state, activity

    # --- running research -----------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return any(w.group == RESEARCH and w.is_running for w in self.workers)

    def focus_query(self) -> None:
        """Focus the query bar with its text selected, so typing starts a new query and arrows edit the old. The
        focus moves at once, so the keys typed right after `/` are typed here (keymap.py, the note above
        FIELD_TABS)."""
        query = self.query_one(QueryInput)
        self.screen.set_focus(query)
        query.select_all()

    def show_filter(self, search_filter: SearchFilter) -> None:
        """The session's filter as chips under the query bar (none without a filter)."""
        self.query_one(QueryInput).show_chips(search_filter.chips())

    @on(Input.Submitted, "#query")
    def _submitted(self, event: Input.Submitted) -> None:
        """A question; its `path:`/`heading:` words become the filter (a follow-up without any keeps the
        session's)."""
        try:
            query, typed_filter = split_query(event.value.strip())
        except FilterError as exc:
            self.notify(describe(exc), severity="error")
            return
        if not query:
            if typed_filter:
                self.notify("A filter narrows a question: type one beside it.", severity="warning")
            return
        if not self.active:
            self.notify("No active collection: show the collections pane (b) and toggle one with space.",
                        severity="warning")
            return
        bar = self.query_one(QueryInput)
        bar.remember(event.value.strip())    # recalled with its filter words
        bar.select_all()   # the focus stays here: typing the next question replaces this one
        self.expanded = "sources"
        if self.turns and self.session is not None and not self.busy:
            self.run_follow_up(self.session, query, typed_filter or None)
        else:
            self.run_research(query, sorted(self.active), typed_filter)

    @work(group=RESEARCH, exclusive=True)
    async def run_research(self, query: str, collections: list[str],
                           search_filter: SearchFilter | None = None) -> None:
        """A new session; while Ollama is down the engine answers keyword-only (no annotation, no answer)."""
        self.post_message(Research.Started())
        previous, self.session = self.session, None
        if previous is not None:
            await previous.aclose()
        if self.status is not None and not self.status.reachable:
            await self.reprobe()
        if not self.workspace.loaded:       # the start-up warm-up is still importing: say so, not nothing
            self._status(Activity.LOADING, "(once per start)")
        self.session = await self.workspace.new_session(query, collections, search_filter=search_filter)
        self.show_filter(self.session.search_filter)
        await self.consume(self.session.run())

    @work(group=RESEARCH, exclusive=True)
    async def run_follow_up(self, session: ResearchSession, question: str,
                            search_filter: SearchFilter | None = None) -> None:
        """The next turn of the conversation: rewritten, retrieved twice, answered with the earlier turns,
        inside `search_filter` when given, else the session's."""
        self.post_message(Research.Started())
        events = session.follow_up(question, search_filter=search_filter)
        self.show_filter(search_filter or session.search_filter)
        await self.consume(events)

    @work(group=RESEARCH, exclusive=True)
    async def run_revised(self, session: ResearchSession, rewrite: str) -> None:
        self.post_message(Research.Started())
        await self.consume(session.revise_rewrite(rewrite))

    @work(group=RESEARCH, exclusive=True)
    async def follow(self, events: AsyncIterator[Event]) -> None:
        """Show the events of one verb of the session (synthesize, re-annotate, continue)."""
        await self.consume(events)

    async def consume(self, events: AsyncIterator[Event]) -> None:
        """Post a stream of engine events to this view; a cancel or a failure is posted after them."""
        try:
            async for event in events:
                self.post_message(research_message(event))
        except asyncio.CancelledError:
            self.post_message(Research.Cancelled())
            raise
        except Exception as exc:  # an engine bug or an unexpected store error: show it, keep the app alive
            self.post_message(Research.Failed(exc))

    def cancel(self) -> bool:
        """Cancel running work; False when nothing was running."""
        if not self.busy:
            return False
        self.workers.cancel_group(self, RESEARCH)
        return True

    def session_or_say(self) -> ResearchSession | None:
        if self.session is None:
            self.notify("No session yet: run a query first (/).", severity="warning")
            return None
        if self.busy:
            self.notify("Still working: wait, or press esc to cancel.", severity="warning")
            return None
        return self.session

    # --- showing the engine's events ------------------------------------------------------

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
            sources.set_sources(self.session.sources, sources.empty_note)  # the session put back what it cut
        synthesis.note("Cancelled. s writes the answer again, R re-annotates.", "warning")
        self._status(Activity.CANCELLED, "(finished work kept)")

    @on(Research.Failed)
    async def _failed(self, message: Research.Failed) -> None:
        error = describe(message.error)
        synthesis = self.query_one(SynthesisView)
        await synthesis.stop_stream()
        synthesis.note(f"Failed: {error}", "error")
        self._status(Activity.FAILED)
        self.notify(error, severity="error", timeout=10)

    @on(Research.Notice)
    def _notice(self, message: Research.Notice) -> None:
        self.notify(message.event.message, severity=SEVERITY[message.event.level], timeout=8)

    @on(Research.RetrievalStarted)
    def _retrieving(self, message: Research.RetrievalStarted) -> None:
        self._status(Activity.RETRIEVING, f"from {', '.join(message.event.collections)}")

    @on(Research.RewriteReady)
    def _rewritten(self, message: Research.RewriteReady) -> None:
        event = message.event
        turn = len(self.session.turns) if self.session is not None else 2
        self.query_one(TurnBar).show_turn(turn, turn, event.question, event.rewrite, event.by)

    @on(Research.SourcesReady)
    def _sources_ready(self, message: Research.SourcesReady) -> None:
        event = message.event
        self.last_meta = event.meta
        note = "" if event.sources else "No hits: nothing in the active collections matches this query."
        self.query_one(SourcesPanel).use = {}
        self._show_sources(event.turn, event.sources, note, event.meta)
        if self.status is not None:
            self.status.keyword_only = event.keyword_only
        self._status(Activity.RETRIEVED, f"{len(event.sources)} sources")
        if not event.sources:
            self.query_one(SynthesisView).note(note, "warning")

    @on(Research.AnnotationStarted)
    @on(Research.AnnotationFinished)
    @on(Research.AnnotationFailed)
    def _annotation(self, message: Research.AnnotationStarted | Research.AnnotationFinished
                    | Research.AnnotationFailed) -> None:
        sources = self.query_one(SourcesPanel)
        sources.put(message.event.source)
        waiting = sum(s.state in (AnnotationState.PENDING, AnnotationState.RUNNING) for s in sources.sources.values())
        self._status(Activity.ANNOTATING, f"{len(sources.sources) - waiting}/{len(sources.sources)}")

    @on(Research.SynthesisStarted)
    async def _writing(self, message: Research.SynthesisStarted) -> None:
        event = message.event
        self.query_one(SourcesPanel).set_use(event.numbers, event.windowed, event.left_out)
        await self.query_one(SynthesisView).begin(short_name(event.model), event.continuation)
        self._status(Activity.WRITING, f"with {short_name(event.model)}")
        if not _within(self.app.focused or self, SourcesPanel):
            self.expanded = "answer"   # the answer takes the room while it streams, unless the sources are in use

    @on(Research.SynthesisToken)
    async def _token(self, message: Research.SynthesisToken) -> None:
        await self.query_one(SynthesisView).write(message.event.text)

    @on(Research.SynthesisFinished)
    async def _written(self, message: Research.SynthesisFinished) -> None:
        event = message.event
        known = set(self.query_one(SourcesPanel).sources)
        await self.query_one(SynthesisView).finish(event.text, event.stop_reason, known, event.unknown_citations,
                                                   event.quotes, uncited=event.uncited, echo=event.echo,
                                                   non_answer=event.non_answer)
        self._status(ENDED.get(event.stop_reason, Activity.DONE),
                     "" if event.stop_reason is StopReason.STOP else f"(answer: {event.stop_reason})")
        self._sync_conversation()

    @on(Research.StageFailed)
    def _stage_failed(self, message: Research.StageFailed) -> None:
        stage, text = message.event.stage, message.event.message
        self.notify(f"{stage} failed: {text}", severity="error", timeout=10)
        self._status(Activity.FAILED, f"({stage})")
        if stage == "synthesize":
            self.query_one(SynthesisView).note(f"Synthesis failed: {text}", "error")
        elif stage == "retrieve":
            self.query_one(SourcesPanel).clear(f"Retrieval failed: {text}")

    @on(Research.SessionSaved)
    def _saved(self, message: Research.SessionSaved) -> None:
        status = self.status
        if status is not None and status.state in RUNNING:
            status.state = Activity.DONE
        if message.event.not_saved:
            self.post_message(self.HistoryUnusable(message.event.not_saved))
            activity = "not saved: the history file is damaged (! shows why)"
        else:
            activity = f"saved as session {message.event.session_id}"
        if status is not None:
            status.activity = activity
        self._sync_conversation()

    # --- one turn in the panes ------------------------------------------------------------

    def _show_sources(self, index: int, sources: tuple[SessionSource, ...], note: str,
                      meta: RetrievalMeta | None) -> None:
        """Turn `index`'s sources, its place in the conversation and how it was retrieved."""
        self.viewed_turn = index
        session = self.session
        if session is not None and len(session.turns) > 1:
            turn = session.turns[index - 1]
            self.query_one(TurnBar).show_turn(index, len(session.turns), turn.query, turn.rewrite, turn.rewrite_by)
        else:
            self.query_one(TurnBar).hide()
        self.query_one(SourcesPanel).set_sources(sources, note)
        if self.status is not None:
            self.status.retrieval = describe_retrieval(meta)

    async def show_turn(self, index: int, sources_note: str) -> None:
        """Turn `index` of the session, whole: its sources, how they were found, and its answer."""
        assert self.session is not None
        turn = self.session.turns[index - 1]
        self._show_sources(index, turn.sources, sources_note, turn.retrieval_meta)
        synthesis = self.query_one(SynthesisView)
        await synthesis.reset()
        await synthesis.finish(turn.answer, turn.stop_reason, {s.number for s in turn.sources},
                               turn.unknown_citations, self.session.quote_checks(turn), turn.error,
                               uncited=turn.uncited, echo=turn.echo, non_answer=turn.non_answer)

    def viewed(self, session: ResearchSession) -> Turn:
        """The turn the panes show (the latest when none was chosen)."""
        index = self.viewed_turn if 1 <= self.viewed_turn <= len(session.turns) else len(session.turns)
        return session.turns[index - 1]

    async def step_turn(self, step: int) -> None:
        """Show the earlier (-1) or later (+1) turn."""
        session = self.session_or_say()
        if session is None:
            return
        index = (self.viewed_turn or len(session.turns)) + step
        if not 1 <= index <= len(session.turns):
            self.notify("No earlier turn." if step < 0 else "This is the latest turn.")
            return
        await self.show_turn(index, "This turn had no sources.")

    async def reopen(self, session_id: int) -> None:
        """Show a stored session as it was left, ready for re-annotation or continuation."""
        self.cancel()
        self.session = await self.workspace.reopen(session_id)
        self.post_message(Research.Reopened(self.session))

    @on(Research.Reopened)
    async def _reopened(self, message: Research.Reopened) -> None:
        session = message.session
        self._sync_conversation()
        self.query_one(QueryInput).value = session.turn.query
        self.show_filter(session.search_filter)
        await self.show_turn(len(session.turns), "This session had no sources.")
        self._status(Activity.READY, f"reopened session {session.id}")

    async def new_session(self) -> None:
        """Forget the conversation: the next query starts a fresh session (the old one stays in the history)."""
        if self.busy:
            self.notify("Still working: wait, or press esc to cancel.", severity="warning")
            return
        previous, self.session = self.session, None
        if previous is not None:
            await previous.aclose()
        self.viewed_turn = 0
        self._sync_conversation()
        self.show_filter(SearchFilter())
        self.query_one(TurnBar).hide()
        self.query_one(SourcesPanel).clear("New session: type a question and press enter.")
        await self.query_one(SynthesisView).reset("")
        self.focus_query()

    # --- sources, citations, copying ------------------------------------------------------

    def toggle_source(self) -> None:
        """Rescue a filtered source, or drop a relevant one."""
        session = self.session_or_say()
        panel = self.query_one(SourcesPanel)
        source = panel.selected()
        if session is None or source is None:
            return
        if source.filtered:
            panel.put(session.rescue(source.number))
            verb = "Rescued"
        else:
            panel.put(session.drop(source.number))
            verb = "Dropped"
        self.notify(f"{verb} [{source.number}]. Press s to write the answer again with it.", timeout=4)

    @on(SourcesPanel.SourceChosen)
    def _chosen(self, message: SourcesPanel.SourceChosen) -> None:
        self.open_source(message.source)

    @on(SynthesisView.CitationClicked)
    def _cited(self, message: SynthesisView.CitationClicked) -> None:
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

        document = await self.workspace.document(source)
        await self.app.push_screen(SourceViewer(source, document, query=self._asked(source),
                                                cursor_blink=self.cursor_blink, details=self.details(source)))

    def copy_answer(self) -> None:
        text = self.query_one(SynthesisView).text
        if not text:
            self.notify("No answer to copy yet.", severity="warning")
            return
        self.post_message(CopyRequested(answer_with_sources(text, self.query_one(SourcesPanel).sources),
                                        "the answer"))

    def copy_source(self) -> None:
        source = self.query_one(SourcesPanel).selected()
        if source is None:
            self.notify("No source selected.", severity="warning")
            return
        self.post_message(CopyRequested(source.chunk.text, f"source [{source.number}]"))

    def _turn_of(self, source: SessionSource) -> Turn | None:
        session = self.session
        if session is None:
            return None
        try:
            return session.turns[session.conversation.turn_of(source.number) - 1]
        except KeyError:
            return None

    def _asked(self, source: SessionSource) -> str:
        """What `source` was annotated against (its turn's question in the conversation)."""
        session = self.session
        if session is None:
            return ""
        try:
            return session.conversation.annotation_query(session.conversation.turn_of(source.number))
        except KeyError:
            return session.turn.query

    def details(self, source: SessionSource) -> list[str]:
        """The engine's explanation of how `source` was found, for its turn."""
        from ragtui.tui.engine import details

        turn = self._turn_of(source)
        lines = details(self.last_meta, [source]) if turn is None else \
            details(turn.retrieval_meta, [source], rewrite=turn.rewrite, rewrite_meta=turn.rewrite_meta)
        return [*lines, *reply_lines(source)]


def reply_lines(source: SessionSource) -> list[str]:
    """The annotation as the model wrote it, line breaks, code and all, under a heading that says whether it
    quotes the source: what to read when the sources pane says "no quote"."""
    if not source.annotation:
        return []
    said = (" (it gives no quote that this source holds)" if source.quoteless
            else " (it quotes words this source does not hold)" if source.misquoted else "")
    return ["", f"Annotation by {source.annotated_by or 'the model'}, as written{said}:",
            *source.annotation.strip().splitlines()]


def _within(widget: Widget, kind: type[Widget]) -> bool:
    return isinstance(widget, kind) or any(isinstance(a, kind) for a in widget.ancestors)
