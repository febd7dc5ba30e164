"""What the research view's panes show: a turn painted whole from the session's snapshot, each engine event as it
comes, and the servers the settings use.

`ResearchPanes` is the one writer of the sources pane, the answer pane, the turn bar
and the status line. A whole turn (a reopened session, turn navigation, the panes
after a cancel) is painted by `paint` from the session's frozen conversation: its
sources, how each went into the prompt (the engine's `use_in_answer`: whole, its most
relevant part, did not fit), its answer; every painted turn replaces all of them, so
nothing of another turn or session stays. Between paints, each event carries the
snapshot it reports (a source as it now stands, the whole answer), and the panes show
what they are given.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from textual.containers import Vertical
from textual.message import Message
from textual.notifications import SeverityLevel

from ragtui import events as ev
from ragtui.events import Event, NoticeLevel
from ragtui.model.conversation import AnnotationState, StopReason, Turn
from ragtui.model.research_run import ResearchRun
from ragtui.model.servers import Server, serving
from ragtui.model_ids import short_name
from ragtui.tui.widgets.plan_progress import PlanProgress
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.status import RUNNING, Activity, StatusLine, describe_retrieval
from ragtui.tui.widgets.synthesis import SynthesisView
from ragtui.tui.widgets.turns import TurnBar

if TYPE_CHECKING:
    from ragtui.config import Settings
    from ragtui.tui.engine_door import ResearchSession

SEVERITY: dict[NoticeLevel, SeverityLevel] = {"info": "information", "warning": "warning", "error": "error"}
# How the status line words the end of an answer.
ENDED = {StopReason.STOP: Activity.DONE, StopReason.CANCELLED: Activity.CANCELLED, StopReason.ERROR: Activity.FAILED}


class PanesHost(Vertical):
    """What the panes ask of the view that holds them (ResearchView)."""

    session: ResearchSession | None = None

    @dataclass
    class HistoryUnusable(Message):
        """A save found the history file damaged: the session runs unsaved."""

        damage: str

    def answer_takes_the_room(self) -> None:
        raise NotImplementedError

    def sync_conversation(self) -> None:
        raise NotImplementedError


class ResearchPanes:
    """The panes of one ResearchView, and the turn they show."""

    def __init__(self, view: PanesHost) -> None:
        self.view = view
        self.index = 0        # the turn the panes show (1-based; 0 before any)
        self.status: StatusLine | None = None      # the screen's status line, handed down once mounted
        self._shows: dict[type[Event], Callable[[Event], Awaitable[None] | None]] = {
            ev.Notice: self._notice, ev.RetrievalStarted: self._retrieving, ev.RewriteReady: self._rewritten,
            ev.SourcesReady: self._sources_ready, ev.AnnotationStarted: self._annotation,
            ev.AnnotationFinished: self._annotation, ev.AnnotationFailed: self._annotation,
            ev.SynthesisStarted: self._writing, ev.SynthesisToken: self._token, ev.SynthesisFinished: self._written,
            ev.StageFailed: self._stage_failed, ev.SessionSaved: self._saved,
            ev.PlanReady: self._planned, ev.SubQuestionChanged: self._part, ev.RoundStarted: self._round,
            ev.LimitReached: self._limit, ev.ResearchFinished: self._researched,
        }

    @property
    def sources(self) -> SourcesPanel:
        return self.view.query_one(SourcesPanel)

    @property
    def synthesis(self) -> SynthesisView:
        return self.view.query_one(SynthesisView)

    @property
    def plan(self) -> PlanProgress:
        return self.view.query_one(PlanProgress)

    def state(self, state: Activity, activity: str = "") -> None:
        if self.status is not None:
            self.status.state, self.status.activity = state, activity

    # --- a whole turn ---------------------------------------------------------------------

    async def paint(self, session: ResearchSession, index: int, sources_note: str) -> None:
        """Turn `index` of the session, whole: its sources and how each went into the prompt, how they were
        found, and its answer."""
        turn = session.turns[index - 1]
        self.index = index
        self._turn_bar(session, index)
        conversation = session.conversation
        # a research run's report holds no sources of its own: it shows every search's
        shown = conversation.all_sources if conversation.is_report and index == len(session.turns) else turn.sources
        use = {s.number: u for s in shown if (u := session.use_in_answer(s.number))}
        self.sources.set_sources(shown, sources_note, use)
        if self.status is not None:
            self.status.retrieval = describe_retrieval(turn.retrieval_meta)
        synthesis = self.synthesis
        await synthesis.reset()
        await synthesis.finish(turn.answer, turn.stop_reason, {s.number for s in shown},
                               turn.unknown_citations, session.quote_checks(turn), turn.error,
                               uncited=turn.uncited, echo=turn.echo, non_answer=turn.non_answer,
                               continuable=turn.can_continue, numbers=session.number_checks(turn))

    def _turn_bar(self, session: ResearchSession | None, index: int) -> None:
        """Turn `index`'s place in the conversation (hidden while it has one turn)."""
        if session is None or len(session.turns) < 2:
            self.view.query_one(TurnBar).hide()
            return
        turn = session.turns[index - 1]
        self.view.query_one(TurnBar).show_turn(index, len(session.turns), turn.query, turn.rewrite, turn.rewrite_by)

    def viewed(self, session: ResearchSession) -> Turn:
        """The turn the panes show (the latest when none was chosen)."""
        index = self.index if 1 <= self.index <= len(session.turns) else len(session.turns)
        return session.turns[index - 1]

    async def clear(self, sources_note: str, answer_note: str = "", *, query_words: tuple[str, ...] = ()) -> None:
        """No turn (yet): the panes empty, with these notes; `query_words` are marked in the sources to come."""
        self.index = 0
        self.view.query_one(TurnBar).hide()
        self.sources.query_words = query_words
        self.sources.clear(sources_note)
        await self.synthesis.reset(answer_note)

    async def failed(self, error: str) -> None:
        """The engine raised instead of reporting a StageFailed: said in the answer pane and a toast."""
        await self.synthesis.stop_stream()
        self.synthesis.note(f"Failed: {error}", "error")
        self.state(Activity.FAILED)
        self.view.notify(error, severity="error", timeout=10)

    # --- the engine's events --------------------------------------------------------------

    async def show(self, event: Event) -> None:
        shown = self._shows.get(type(event))
        if shown is not None and (pending := shown(event)) is not None:
            await pending

    # --- a research run's plan ---------------------------------------------------------------

    def _planned(self, event: Event) -> None:
        assert isinstance(event, ev.PlanReady)
        self.plan.show_run(ResearchRun(question="", plan=event.plan, planned_by=event.by))

    def _part(self, event: Event) -> None:
        assert isinstance(event, ev.SubQuestionChanged)
        self.plan.put(event.index, event.sub)

    def _round(self, event: Event) -> None:
        assert isinstance(event, ev.RoundStarted)
        if self.plan.run is not None:
            self.plan.show_run(replace(self.plan.run, rounds=event.round))

    def _limit(self, event: Event) -> None:
        assert isinstance(event, ev.LimitReached)
        self.view.notify(event.message, severity="warning", timeout=8)
        if self.plan.run is not None:
            self.plan.show_run(replace(self.plan.run, limits_hit=(*self.plan.run.limits_hit, event.limit)))

    async def _researched(self, event: Event) -> None:
        """The run ended: its plan with the cost, and the report with every search's sources."""
        assert isinstance(event, ev.ResearchFinished)
        self.plan.show_run(event.run, finished=True)
        session = self.view.session
        if session is not None and session.conversation.is_report:
            await self.paint(session, len(session.turns), "")

    def _notice(self, event: Event) -> None:
        assert isinstance(event, ev.Notice)
        self.view.notify(event.message, severity=SEVERITY[event.level], timeout=8)

    def _retrieving(self, event: Event) -> None:
        assert isinstance(event, ev.RetrievalStarted)
        self.state(Activity.RETRIEVING, f"from {', '.join(event.collections)}")

    def _rewritten(self, event: Event) -> None:
        assert isinstance(event, ev.RewriteReady)
        session = self.view.session
        turn = len(session.turns) if session is not None else 2
        self.view.query_one(TurnBar).show_turn(turn, turn, event.question, event.rewrite, event.by)

    def _sources_ready(self, event: Event) -> None:
        assert isinstance(event, ev.SourcesReady)
        self.index = event.turn
        self._turn_bar(self.view.session, event.turn)
        note = "" if event.sources else "No hits: nothing in the active collections matches this query."
        self.sources.set_sources(event.sources, note, {})
        if self.status is not None:
            self.status.retrieval = describe_retrieval(event.meta)
            self.status.keyword_only = event.keyword_only
        self.state(Activity.RETRIEVED, f"{len(event.sources)} sources")
        if not event.sources:
            self.synthesis.note(note, "warning")

    def _annotation(self, event: Event) -> None:
        assert isinstance(event, ev.SourceChanged)
        sources = self.sources
        sources.put(event.source)
        waiting = sum(s.state in (AnnotationState.PENDING, AnnotationState.RUNNING) for s in sources.sources.values())
        self.state(Activity.ANNOTATING, f"{len(sources.sources) - waiting}/{len(sources.sources)}")

    async def _writing(self, event: Event) -> None:
        assert isinstance(event, ev.SynthesisStarted)
        self.sources.set_use(event.numbers, event.windowed, event.left_out)
        await self.synthesis.begin(short_name(event.model), event.continuation)
        self.state(Activity.WRITING, f"with {short_name(event.model)}")
        self.view.answer_takes_the_room()

    async def _token(self, event: Event) -> None:
        assert isinstance(event, ev.SynthesisToken)
        await self.synthesis.write(event.text)

    async def _written(self, event: Event) -> None:
        assert isinstance(event, ev.SynthesisFinished)
        session = self.view.session
        continuable = session is not None and session.turn.can_continue
        await self.synthesis.finish(event.text, event.stop_reason, set(self.sources.sources),
                                    event.unknown_citations, event.quotes, uncited=event.uncited,
                                    echo=event.echo, non_answer=event.non_answer, continuable=continuable,
                                    numbers=event.numbers)
        self.state(ENDED.get(event.stop_reason, Activity.DONE),
                   "" if event.stop_reason is StopReason.STOP else f"(answer: {event.stop_reason})")
        self.view.sync_conversation()

    def _stage_failed(self, event: Event) -> None:
        assert isinstance(event, ev.StageFailed)
        self.view.notify(f"{event.stage} failed: {event.message}", severity="error", timeout=10)
        self.state(Activity.FAILED, f"({event.stage})")
        if event.stage == "synthesize":
            self.synthesis.note(f"Synthesis failed: {event.message}", "error")
        elif event.stage == "retrieve":
            self.sources.clear(f"Retrieval failed: {event.message}")

    def _saved(self, event: Event) -> None:
        assert isinstance(event, ev.SessionSaved)
        status = self.status
        if status is not None and status.state in RUNNING:
            status.state = Activity.DONE
        if event.not_saved:
            self.view.post_message(self.view.HistoryUnusable(event.not_saved))
            activity = "not saved: the history file is damaged (! shows why)"
        else:
            activity = f"saved as session {event.session_id}"
        if status is not None:
            status.activity = activity
        self.view.sync_conversation()

    # --- the servers and WordNet ---------------------------------------------------------

    def wordnet(self, on: bool, reason: str) -> None:
        if self.status is not None:
            self.status.wordnet, self.status.wordnet_reason = on, reason

    def servers(self, settings: Settings, servers: tuple[Server, ...]) -> None:
        """The status line and the answer pane's banner say which server is down and what that costs, and which
        configured models a server lacks."""
        if self.status is not None:
            self.status.servers = servers
        chat, embeddings = serving(servers, "chat"), serving(servers, "embeddings")
        down = [s for s in servers if not s.reachable]
        if down:
            lost = ([] if embeddings is None or embeddings.reachable else ["keyword-only retrieval"]) + \
                ([] if chat is None or chat.reachable else ["no annotation and no answer"])
            self.synthesis.note("\n".join(s.error for s in down) + f"\nUntil it is: {', '.join(lost)}.", "error")
            return
        lacking = [line for s in servers for line in _missing_lines(s)]
        if lacking:
            self.synthesis.note(" ".join(lacking), "warning")
        elif not settings.llm.model:
            from ragtui.config import user_config_path

            self.synthesis.note(f"No synthesis model set: set llm.model in {user_config_path()}.", "warning")


def _missing_lines(server: Server) -> list[str]:
    if not server.missing:
        return []
    names = ", ".join(server.missing)
    if server.kind == "ollama":
        return [f"Not pulled on this Ollama: {names}. Run " + "; ".join(f"`ollama pull {m}`" for m in server.missing)]
    return [f"Not served by {server.address}: {names} (it serves: {', '.join(server.models)})."]
