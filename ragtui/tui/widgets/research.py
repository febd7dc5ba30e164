"""The research view: the query bar, the turn bar, the sources and the answer, the session behind them, and every
research verb with its guard (the screen's keys call them and do nothing else).

It owns the session and the workers that talk to it. A worker never draws: it posts
each engine event to this view (one message, `Research.EngineEvent`), and the view
hands them to its panes (`ResearchPanes`), in the order they came; a whole turn is
painted by one painter from the session's snapshot. Below 150 columns the panes are
stacked and the one in use (`expanded`) gets the room.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Container
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Input

from ragtui.config import Settings
from ragtui.errors import describe
from ragtui.events import Event
from ragtui.model.conversation import SessionSource
from ragtui.model.filters import FilterError, SearchFilter, split_query
from ragtui.model.servers import annotators
from ragtui.sanitize import one_line
from ragtui.tui import keymap
from ragtui.tui.messages import CopyRequested, Research
from ragtui.tui.widgets.plan_progress import PlanProgress
from ragtui.tui.widgets.query import QueryInput
from ragtui.tui.widgets.research_panes import PanesHost, ResearchPanes
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.status import Activity, StatusLine
from ragtui.tui.widgets.synthesis import SynthesisView, answer_with_sources
from ragtui.tui.widgets.turns import TurnBar

if TYPE_CHECKING:
    from ragtui.model.servers import Server
    from ragtui.tui.engine_door import AsyncWorkspace, ResearchRunner, ResearchSession

RESEARCH = "research"    # worker group of everything that talks to the LLM or the stores for a session


class ResearchView(PanesHost):
    expanded: reactive[str] = reactive("sources")   # the stacked pane with the room: sources or answer
    active: reactive[frozenset[str]] = reactive(frozenset())   # the collections a new query searches (the screen's)
    turns: reactive[int] = reactive(0)     # turns of the conversation a submitted query follows up; 0: a new one

    def __init__(self, settings: Settings, workspace: AsyncWorkspace, *, keys: keymap.KeyTable | None = None,
                 cursor_blink: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings
        self.keys = keys if keys is not None else keymap.defaults()
        self.workspace = workspace
        self.cursor_blink = cursor_blink
        self.session: ResearchSession | None = None
        self.runner: ResearchRunner | None = None      # the research run of `session`, while it is one
        self.servers: tuple[Server, ...] = ()     # as the last probe found them
        self.panes = ResearchPanes(self)

    def compose(self) -> ComposeResult:
        yield QueryInput(id="query")
        yield TurnBar(id="turn-bar")
        yield PlanProgress(id="plan-progress")
        with Container(id="results"):
            yield SourcesPanel(self.settings.annotation.irrelevant_marker, id="sources")
            yield SynthesisView(id="synthesis")

    def on_mount(self) -> None:
        query = self.query_one(QueryInput)
        query.cursor_blink = self.cursor_blink
        query.focus()

    def use_status_line(self, status: StatusLine) -> None:
        """The screen's status line: the panes write it."""
        self.panes.status = status

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

    def answer_takes_the_room(self) -> None:
        """The answer takes the room while it streams, unless the sources are in use."""
        if not _within(self.app.focused or self, SourcesPanel):
            self.expanded = "answer"

    def show_tab(self, tab: str) -> None:
        """The Relevant, Filtered or All tab of the sources."""
        self.query_one(SourcesPanel).show_tab(tab)
        self.expanded = "sources"

    def filter_sources(self) -> None:
        self.expanded = "sources"
        self.query_one(SourcesPanel).start_filter()

    def idle_note(self, note: str) -> None:
        """What the sources pane says before any session (a session's own note, e.g. no hits, stays)."""
        sources = self.query_one(SourcesPanel)
        if self.session is None and not self.busy and not sources.sources:
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

    def sync_conversation(self) -> None:
        """A session with an answer takes follow-ups: the query bar says so."""
        session = self.session
        self.turns = len(session.turns) if session is not None and any(t.answer.strip() for t in session.turns) \
            else 0
        self._title_query()

    # --- the servers ----------------------------------------------------------------------

    @work(group="servers", exclusive=True)
    async def probe(self) -> None:
        """Ask the servers the settings use whether they answer (at start-up, and after work done while one
        was down): never before a query, which would wait for a server that is down."""
        self.post_message(Research.ServersProbed(await self.workspace.probe()))

    @on(Research.ServersProbed)
    def _probed(self, message: Research.ServersProbed) -> None:
        self.servers = message.servers
        self.panes.servers(self.settings, message.servers)

    @work(group="probe")
    async def check_wordnet(self) -> None:
        """Whether synonym expansion will run, on the status line."""
        try:
            on_, reason = await self.workspace.wordnet_state()
        except Exception as exc:  # a broken wn database must not stop the app; say so instead
            on_, reason = False, describe(exc)
        self.panes.wordnet(on_, reason)

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
        """A new session; while a server is down the engine does what it can (keyword-only, no answer)."""
        await self._leave_session()
        self.session = await self.workspace.new_session(query, collections, search_filter=search_filter)
        self.show_filter(self.session.search_filter)
        await self.consume(self.session.run())

    async def _leave_session(self) -> None:
        """A new session begins: the old one closed, the plan of a research run hidden."""
        self.post_message(Research.Started())
        previous, self.session, self.runner = self.session, None, None
        self.panes.plan.show_run(None)
        if previous is not None:
            await previous.aclose()
        if not self.workspace.loaded:       # the start-up warm-up is still importing: say so, not nothing
            self.panes.state(Activity.LOADING, "(once per start)")

    def research_run(self) -> None:
        """The query as a research run: the model's plan, edited before it runs (unless research.edit_plan is
        off), then evidence for each sub-question and one report."""
        try:
            query, typed_filter = split_query(self.query_one(QueryInput).value.strip())
        except FilterError as exc:
            self.notify(describe(exc), severity="error")
            return
        if not query:
            self.notify("Type a question in the query bar first, then press "
                        f"{self.keys['research_run']} to research it.", severity="warning")
        elif not self.active:
            self.notify("No active collection: show the collections pane (b) and toggle one with space.",
                        severity="warning")
        elif self.busy:
            self.notify("Still working: wait, or press esc to cancel.", severity="warning")
        else:
            self.query_one(QueryInput).remember(self.query_one(QueryInput).value.strip())
            self.run_deep(query, sorted(self.active), typed_filter)

    @work(group=RESEARCH, exclusive=True)
    async def run_deep(self, query: str, collections: list[str], search_filter: SearchFilter | None) -> None:
        from ragtui.tui.screens.plan_editor import PlanEditor

        await self._leave_session()
        runner = await self.workspace.research(query, collections, search_filter=search_filter)
        self.session, self.runner = runner.session, runner
        self.show_filter(runner.session.search_filter)
        if self.settings.research.edit_plan:
            await self.consume(runner.propose())
            plan = runner.state
            parts = await self.app.push_screen_wait(PlanEditor(query, [s.text for s in plan.plan], plan.planned_by))
            if parts is None:
                self.panes.plan.show_run(None)
                await self.panes.clear("The research run was not started.", "")
                return
            runner.set_plan(parts)
            self.panes.plan.show_run(runner.state)
        await self.consume(runner.run())

    def cancel_part(self) -> None:
        """Cancel the sub-question the research run is searching; the run goes on with the next."""
        from ragtui.model.research_run import SubState

        runner = self.runner
        searching = (SubState.SEARCHING, SubState.ANNOTATING)
        running = [i for i, s in enumerate(runner.state.plan) if s.state in searching] if runner and self.busy else []
        if runner is None or not running:
            self.notify("No sub-question of a research run is being searched now.", severity="warning")
            return
        runner.cancel(running[0])
        self.notify(f"Sub-question {running[0] + 1} cancelled: what it annotated is kept; the run goes on.")

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
        """Post a stream of engine events to this view; a cancel or a failure is posted after them. Work done
        while a server was down asks the servers again afterwards, so the status line follows."""
        try:
            async for event in events:
                self.post_message(Research.EngineEvent(event))
        except asyncio.CancelledError:
            self.post_message(Research.Cancelled())
            raise
        except Exception as exc:  # an engine bug or an unexpected store error: show it, keep the app alive
            self.post_message(Research.Failed(exc))
        if any(not s.reachable for s in self.servers):
            self.probe()

    def cancel(self) -> bool:
        """Cancel running work; False when nothing was running."""
        if not self.busy:
            return False
        self.workers.cancel_group(self, RESEARCH)
        return True

    def cancel_or_leave(self) -> None:
        """esc: cancel running work; with nothing running, leave the query bar for the sources."""
        if not self.cancel() and self.app.focused is self.query_one(QueryInput):
            self.screen.set_focus(self.query_one(SourcesPanel).active_table)

    def session_or_say(self) -> ResearchSession | None:
        if self.session is None:
            self.notify("No session yet: run a query first (/).", severity="warning")
            return None
        if self.busy:
            self.notify("Still working: wait, or press esc to cancel.", severity="warning")
            return None
        return self.session

    # --- showing the engine's events ------------------------------------------------------

    @on(Research.EngineEvent)
    async def _engine_event(self, message: Research.EngineEvent) -> None:
        await self.panes.show(message.event)

    @on(Research.Started)
    async def _started(self) -> None:
        await self.panes.clear("Retrieving …", query_words=tuple(self.query_one(QueryInput).value.split()))

    @on(Research.Cancelled)
    async def _cancelled(self) -> None:
        if not self.query(SynthesisView):  # the app is shutting down: nothing left to update
            return
        session = self.session
        if session is not None and session.conversation.research is not None:    # the run as the cancel left it
            self.panes.plan.show_run(session.conversation.research, finished=True)
        if session is not None and session.turns:      # the session put back what the cancel cut
            await self.panes.paint(session, len(session.turns), "Cancelled before any source was found.")
        else:
            await self.panes.clear("Cancelled.", "Cancelled.")
        self.panes.state(Activity.CANCELLED, "(finished work kept)")

    @on(Research.Failed)
    async def _failed(self, message: Research.Failed) -> None:
        await self.panes.failed(describe(message.error))

    # --- turns and sessions ---------------------------------------------------------------

    async def step_turn(self, step: int) -> None:
        """Show the earlier (-1) or later (+1) turn."""
        session = self.session_or_say()
        if session is None:
            return
        index = (self.panes.index or len(session.turns)) + step
        if not 1 <= index <= len(session.turns):
            self.notify("No earlier turn." if step < 0 else "This is the latest turn.")
            return
        await self.panes.paint(session, index, "This turn had no sources.")

    async def reopen(self, session_id: int) -> None:
        """Show a stored session as it was left, ready for re-annotation or continuation."""
        self.cancel()
        self.session = await self.workspace.reopen(session_id)
        self.post_message(Research.Reopened(self.session))

    @on(Research.Reopened)
    async def _reopened(self, message: Research.Reopened) -> None:
        session = message.session
        self.runner = None
        self.panes.plan.show_run(session.conversation.research, finished=True)
        self.sync_conversation()
        self.query_one(QueryInput).value = session.turn.query
        self.show_filter(session.search_filter)
        await self.panes.paint(session, len(session.turns), "This session had no sources.")
        self.panes.state(Activity.READY, f"reopened session {session.id}")

    async def new_session(self) -> None:
        """Forget the conversation: the next query starts a fresh session (the old one stays in the history).
        The focus goes to the query bar, where a `/` typed by habit is not typed."""
        if self.busy:
            self.notify("Still working: wait, or press esc to cancel.", severity="warning")
            return
        previous, self.session, self.runner = self.session, None, None
        self.panes.plan.show_run(None)
        if previous is not None:
            await previous.aclose()
        self.sync_conversation()
        self.show_filter(SearchFilter())
        await self.panes.clear("New session: type a question and press enter.")
        self.focus_query()
        self.query_one(QueryInput).expect_habit(self.keys["focus_query"])

    # --- the verbs ------------------------------------------------------------------------

    def continue_answer(self) -> None:
        """Continue the latest answer, when `Turn.can_continue`; else say why not (`Turn.continue_refusal`)."""
        session = self.session_or_say()
        if session is None:
            return
        refusal = session.turn.continue_refusal
        if refusal:
            self.notify(refusal[0].upper() + refusal[1:] + ".")
            return
        self.follow(session.continue_answer())

    def synthesize(self) -> None:
        if (session := self.session_or_say()) is not None:
            self.follow(session.synthesize())

    def reannotate_selected(self) -> None:
        session = self.session_or_say()
        source = self.query_one(SourcesPanel).selected()
        if session is not None and source is not None:
            self.follow(session.reannotate([source.number]))

    def reannotate_all(self) -> None:
        if (session := self.session_or_say()) is not None:
            self.follow(session.reannotate())

    @work(group="model-picker", exclusive=True)
    async def reannotate_with(self) -> None:
        """Re-annotate the selected source or the shown turn's with a model the chat server lists, or a prompt."""
        from ragtui.tui.screens.model_picker import ModelPickerScreen

        session = self.session_or_say()
        if session is None:
            return
        source = self.query_one(SourcesPanel).selected()
        current = session.conversation.annotation_model or self.settings.llm.annotator
        models = annotators(self.servers, self.settings.embed.all_models) or [current]
        choice = await self.app.push_screen_wait(ModelPickerScreen(models, current, source.number if source else None))
        if choice is None:
            return
        numbers = list(choice.numbers) if choice.numbers else [s.number for s in self.panes.viewed(session).sources]
        self.follow(session.reannotate(numbers, model=choice.model, prompt_file=choice.prompt_file or None))

    @work(group="rewrite-dialog", exclusive=True)
    async def edit_rewrite(self) -> None:
        """Edit the follow-up's standalone rewrite, and retrieve the turn again with it."""
        from ragtui.tui.screens.rewrite import RewriteScreen

        session = self.session_or_say()
        if session is None:
            return
        if len(session.turns) < 2:
            self.notify("Only a follow-up has a rewrite: ask one first.", severity="warning")
            return
        text = await self.app.push_screen_wait(RewriteScreen(session.turn.query, session.turn.rewrite))
        if text:
            self.run_revised(session, text)

    def edit_question(self) -> None:
        """Write the question in $VISUAL / $EDITOR (paragraphs and all); saving it asks it, an empty file does not."""
        from ragtui.tui.editor import EditorFailed, edit_text

        bar = self.query_one(QueryInput)
        try:
            question = edit_text(self.app, bar.value).strip()
        except EditorFailed as exc:
            self.notify(str(exc), severity="warning")
            return
        bar.focus()
        if not question:
            self.notify("The edited question is empty: nothing asked.")
            return
        bar.value = " ".join(question.split())      # the bar shows one line; the question keeps its paragraphs
        bar.post_message(Input.Submitted(bar, question))

    def open_answer(self) -> None:
        """The answer, with the list of the sources it cites, in $VISUAL / $EDITOR (to read, search or save)."""
        from ragtui.tui.editor import EditorFailed, show_text

        text = self.panes.synthesis.text
        if not text:
            self.notify("No answer to open yet.", severity="warning")
            return
        try:
            show_text(self.app, answer_with_sources(text, self.query_one(SourcesPanel).sources))
        except EditorFailed as exc:
            self.notify(str(exc), severity="warning")

    def show_details(self) -> None:
        """How the selected source was found, in a dialog."""
        from ragtui.tui.screens.details import DetailsScreen
        from ragtui.tui.widgets.source_details import details

        source = self.query_one(SourcesPanel).selected()
        if source is None:
            self.notify("No source selected.", severity="warning")
            return
        self.app.push_screen(DetailsScreen(f"Why [{source.number}] {source.chunk.label}",
                                           details(self.session, source)))

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
            source = next((s for s in self.session.conversation.all_sources if s.number == message.number), None)
        if source is not None:
            self.open_source(source)

    @work(group="viewer", exclusive=True)
    async def open_source(self, source: SessionSource) -> None:
        await self.show_source(source)

    async def show_source(self, source: SessionSource, note: str = "") -> None:
        """The source viewer on `source`; `note` above the text, beside the document's own."""
        from ragtui.tui.screens.source_viewer import SourceViewer
        from ragtui.tui.widgets.source_details import asked, details

        document = await self.workspace.document(source)
        if note:
            document = dataclasses.replace(document, note=" ".join(filter(None, (note, document.note))))
        await self.app.push_screen(SourceViewer(source, document, query=asked(self.session, source),
                                                cursor_blink=self.cursor_blink, details=details(self.session, source),
                                                page_view=self.page_view))

    def page_view_selected(self) -> None:
        source = self.query_one(SourcesPanel).selected()
        if source is None:
            self.notify("No source selected.", severity="warning")
            return
        self.page_view(source)

    @work(group="viewer", exclusive=True)
    async def page_view(self, source: SessionSource) -> None:
        """The PDF page `source` lies on (tui/screens/page_view.py); for a document with no pages to draw, the
        source viewer with its text, saying so."""
        from ragtui.tui.screens.page_view import PageView

        meta = source.chunk.meta
        if meta.format == "pdf" and meta.page_index >= 0:
            session_id = self.session.conversation.id if self.session is not None else 0
            await self.app.push_screen(PageView(source, self.workspace, self.app.page_graphics,  # type: ignore[attr-defined]
                                                session_id=session_id or 0))
            return
        kind = f"a {meta.format} file" if meta.format else "not a PDF"
        await self.show_source(source, note=f"The page view draws PDF pages; {one_line(meta.source)} is {kind}, "
                                            "so here is its text.")

    def copy_answer(self) -> None:
        text = self.panes.synthesis.text
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


def _within(widget: Widget, kind: type[Widget]) -> bool:
    return isinstance(widget, kind) or any(isinstance(a, kind) for a in widget.ancestors)
