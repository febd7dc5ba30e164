"""Messages that are not one widget's own: engine events carried to the research view, the probe's result, copying."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from ragtui.events import Event
from ragtui.model.servers import Server

if TYPE_CHECKING:
    from ragtui.tui.engine_door import ResearchSession


class Research:
    """The research view's messages. A research worker posts every change it makes to the view to it, so they
    are shown one after another in the order they happened (tokens in order, SynthesisFinished after the last
    token, a new query's cleared panes after whatever a cancelled one still had queued)."""

    @dataclass
    class EngineEvent(Message, bubble=False):
        """One engine event, as the session yielded it: the view shows each kind its own way."""

        event: Event

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

    @dataclass
    class ServersProbed(Message, bubble=False):
        """The servers the settings use, as a probe found them."""

        servers: tuple[Server, ...]


@dataclass
class CopyRequested(Message):
    """Copy this text to the clipboard; `what` names it in the notification."""

    text: str
    what: str
