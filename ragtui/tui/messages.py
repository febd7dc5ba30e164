"""Messages the TUI's widgets and workers post; handled with @on(...) in the app."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from ragtui.events import Event
from ragtui.model import SessionSource


@dataclass
class EngineEvent(Message):
    """An engine event produced by a worker, to be rendered."""

    event: Event


@dataclass
class OllamaProbed(Message):
    """Result of the start-up probe: the models Ollama has, or why it could not be reached."""

    host: str
    version: str = ""
    models: tuple[str, ...] = ()
    error: str = ""


@dataclass
class CollectionToggled(Message):
    name: str
    active: bool


@dataclass
class SourceChosen(Message):
    """The user pressed enter on a source row: open it in the viewer."""

    source: SessionSource


@dataclass
class CitationClicked(Message):
    number: int
