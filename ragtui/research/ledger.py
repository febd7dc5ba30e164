"""The one place a session's conversation changes: it is replaced whole, and saved to the history on request."""

from __future__ import annotations

import dataclasses
from typing import Any

from ragtui.errors import describe
from ragtui.history import HistoryStore, HistoryUnusable
from ragtui.model.conversation import Conversation, SessionSource, Turn


class Ledger:
    """A session's conversation as it stands, and where it is saved.

    A history file that cannot be used (damaged, or not writable) never stops a session: it runs in memory
    only, and `not_saved` says why.
    """

    def __init__(self, conversation: Conversation, history: HistoryStore) -> None:
        self.conversation = conversation
        self.history = history
        self.not_saved = ""                   # why the history does not hold this session ("" while it does)

    @property
    def turn(self) -> Turn:
        return self.conversation.turn

    def reopen(self, session_id: int) -> Conversation:
        """The stored conversation `session_id` becomes this ledger's (HistoryError when there is none)."""
        self.conversation = self.history.load(session_id)
        return self.conversation

    def change(self, **changes: Any) -> Conversation:
        """The conversation's own fields (models, annotation on/off, turns) changed."""
        self.conversation = dataclasses.replace(self.conversation, **changes)
        return self.conversation

    def change_turn(self, **changes: Any) -> Turn:
        """The latest turn with `changes`."""
        self.conversation = self.conversation.with_turn(dataclasses.replace(self.turn, **changes))
        return self.turn

    def time(self, stage: str, seconds: float) -> None:
        """Add `seconds` to the latest turn's time for `stage`."""
        self.conversation = self.conversation.with_turn(self.turn.timed(stage, seconds))

    def put(self, source: SessionSource) -> SessionSource:
        """Replace the source holding `source.number`; sources already handed out stay as they were."""
        self.conversation = self.conversation.with_source(source)
        return source

    def save(self) -> int | None:
        """Write the conversation to the history; None when the history file cannot be used (`not_saved` says so)."""
        try:
            self.conversation = self.history.save(self.conversation)
        except HistoryUnusable as exc:
            self.not_saved = describe(exc)
            return None
        return self.conversation.id
