"""Messages that are not one widget's own: engine events carried to the research view, the probe's result, copying."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from textual.message import Message

from ragtui import events
from ragtui.events import Event

if TYPE_CHECKING:
    from ragtui.tui.engine import ResearchSession

E = TypeVar("E", bound=Event)


@dataclass
class EngineEvent(Message, Generic[E], bubble=False):
    """One engine event, posted by the worker that consumes the engine's stream, to the screen that shows it."""

    event: E

    def __init_subclass__(cls, bubble: bool | None = False, **kwargs: Any) -> None:
        super().__init_subclass__(bubble=bubble, **kwargs)  # subclasses too stay with the screen they are posted to


class Research:
    """The research view's messages. A research worker posts every change it makes to the view to its screen,
    so they are shown one after another in the order they happened (tokens in order, SynthesisFinished after
    the last token, a new query's cleared panes after whatever a cancelled one still had queued)."""

    class Notice(EngineEvent[events.Notice]): ...
    class RetrievalStarted(EngineEvent[events.RetrievalStarted]): ...
    class RewriteReady(EngineEvent[events.RewriteReady]): ...
    class SourcesReady(EngineEvent[events.SourcesReady]): ...
    class AnnotationStarted(EngineEvent[events.AnnotationStarted]): ...
    class AnnotationFinished(EngineEvent[events.AnnotationFinished]): ...
    class AnnotationFailed(EngineEvent[events.AnnotationFailed]): ...
    class SynthesisStarted(EngineEvent[events.SynthesisStarted]): ...
    class SynthesisToken(EngineEvent[events.SynthesisToken]): ...
    class SynthesisFinished(EngineEvent[events.SynthesisFinished]): ...
    class StageFailed(EngineEvent[events.StageFailed]): ...
    class SessionSaved(EngineEvent[events.SessionSaved]): ...

    class Started(Message, bubble=False):
        """A new query or follow-up turn: clear the panes."""

    class Cancelled(Message, bubble=False):
        """The user cancelled the running work."""

    @dataclass
    class Failed(Message, bubble=False):
        """The engine raised instead of reporting a StageFailed: a bug or an unexpected store error."""

        error: Exception

    @dataclass
    class Reopened(Message, bubble=False):
        """A stored session, to be shown as it was left."""

        session: ResearchSession


_FOR_EVENT: dict[type[Event], type[EngineEvent[Any]]] = {
    events.Notice: Research.Notice,
    events.RetrievalStarted: Research.RetrievalStarted,
    events.RewriteReady: Research.RewriteReady,
    events.SourcesReady: Research.SourcesReady,
    events.AnnotationStarted: Research.AnnotationStarted,
    events.AnnotationFinished: Research.AnnotationFinished,
    events.AnnotationFailed: Research.AnnotationFailed,
    events.SynthesisStarted: Research.SynthesisStarted,
    events.SynthesisToken: Research.SynthesisToken,
    events.SynthesisFinished: Research.SynthesisFinished,
    events.StageFailed: Research.StageFailed,
    events.SessionSaved: Research.SessionSaved,
}


def research_message(event: Event) -> EngineEvent[Any]:
    """The message that carries this research event (a plain EngineEvent for a kind the view does not show)."""
    return _FOR_EVENT.get(type(event), EngineEvent)(event)


@dataclass
class OllamaProbed(Message, bubble=False):
    """Result of a probe: the models Ollama has, or why it could not be reached."""

    models: tuple[str, ...] = ()
    error: str = ""


@dataclass
class CopyRequested(Message):
    """Copy this text to the clipboard; `what` names it in the notification."""

    text: str
    what: str
