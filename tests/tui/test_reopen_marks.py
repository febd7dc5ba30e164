"""The research view alone, over a fake workspace: reopening session after session shows each session's own
marks of how its sources went into its answer (whole, its most relevant part, did not fit), and never another's."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult

from ragtui.config import Settings
from ragtui.events import SynthesisStarted
from ragtui.history import HistoryStore
from ragtui.model.conversation import Conversation, StopReason, Turn
from ragtui.research.session import ResearchSession
from ragtui.tui.messages import Research
from ragtui.tui.widgets.research import ResearchView
from ragtui.tui.widgets.sources import USE_STYLES, USE_WORDS, SourcesPanel, SourceTable
from tests.tui.conftest import handled
from tests.tui.scripted import ANSWER, make_sources


class MarkedSession(ResearchSession):
    """A session whose synthesis packed its prompt in this process: the engine then says how each source went in."""

    marks: ClassVar[dict[int, str]] = {}

    def use_in_answer(self, number: int) -> str | None:
        return self.marks.get(number)


class FakeWorkspace:
    """What the view asks of the workspace here: reopen a stored session."""

    loaded = True

    def __init__(self, sessions: dict[int, ResearchSession]) -> None:
        self.sessions = sessions

    async def reopen(self, session_id: int) -> ResearchSession:
        return self.sessions[session_id]

    async def probe(self) -> tuple[Any, ...]:
        return ()


class ViewApp(App[None]):
    def __init__(self, settings: Settings, workspace: FakeWorkspace) -> None:
        super().__init__()
        self.settings, self.workspace = settings, workspace

    def compose(self) -> ComposeResult:
        yield ResearchView(self.settings, self.workspace, cursor_blink=False, id="work")  # type: ignore[arg-type]


def stored(settings: Settings, answer: str, stop_reason: StopReason, marks: dict[int, str] | None = None) -> Any:
    """A one-turn session over make_sources()' [1]-[5], saved and reopened as the engine reopens it."""
    turn = Turn(query="What does natural selection preserve?", sources=make_sources()[:3], answer=answer,
                stop_reason=stop_reason, prompt=(("user", "q"),) if answer else (),
                prompt_numbers=(1, 2, 3) if answer else ())
    record = HistoryStore(settings.data_dir).save(Conversation(collections=("demo",), config={},
                                                                synthesis_model="chat", annotation_model="chat",
                                                                turns=(turn,)))
    assert record.id is not None
    kind = MarkedSession if marks is not None else ResearchSession

    async def no_retrieval(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a reopened session is shown, not retrieved again")

    session = kind.reopen(settings, record.id, history=HistoryStore(settings.data_dir), retrieve=no_retrieval)
    if isinstance(session, MarkedSession):
        session.marks = marks or {}
    return session


def shown_marks(view: ResearchView) -> dict[int, str]:
    """The marks as the rows draw them: the style of each source's number cell, read back to its mark."""
    panel = view.query_one(SourcesPanel)
    table = view.query_one("#all-table", SourceTable)
    by_style = {style: mark for mark, style in USE_STYLES.items()}
    marks = {}
    for n in panel.sources:
        style = str(table.get_cell(str(n), "#").style)
        if style in by_style:
            marks[n] = by_style[style]
    assert marks == panel.use
    return marks


async def test_reopening_session_after_session_never_shows_another_sessions_marks(
        snapshot_settings: Any, tmp_path: Path) -> None:
    settings = snapshot_settings()
    marked = {1: "whole", 2: "window", 3: "did not fit"}
    sessions = {1: stored(settings, ANSWER, StopReason.STOP, marked),      # answered in this process: marked
                2: stored(settings, "", StopReason.CANCELLED),           # cancelled before any answer
                3: stored(settings, ANSWER, StopReason.STOP)}            # answered in an earlier run
    app = ViewApp(settings, FakeWorkspace(sessions))
    async with app.run_test(size=(160, 40)) as pilot:
        view = app.query_one(ResearchView)
        view.query_one(SourcesPanel).show_tab("all")

        async def reopen(session_id: int) -> dict[int, str]:
            await view.reopen(session_id)
            await handled(view)
            await pilot.pause()
            return shown_marks(view)

        assert await reopen(1) == marked
        assert await reopen(2) == {}
        detail = str(view.query_one("#source-detail").render())
        assert not any(words in detail for words in USE_WORDS.values())
        assert await reopen(1) == marked
        assert await reopen(3) == {}
        # an answer being written marks its sources; the next session reopened does not keep them
        view.post_message(Research.EngineEvent(SynthesisStarted("chat", (1, 2), windowed=(2,), left_out=(3,))))
        await handled(view)
        assert shown_marks(view) == marked
        assert await reopen(2) == {}
        assert await reopen(3) == {}
