"""The quick switcher: the collections and the past sessions, matched fuzzily as you type (Textual's matcher).

Choosing a collection makes it the one a query searches; choosing a session reopens it. It is a command
palette provider, so the palette (ctrl+p) offers the same entries, and its own key (keymap: `switcher`)
opens a palette holding only these.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher
from textual.markup import escape

from ragtui.errors import describe
from ragtui.model.collection import CollectionInfo
from ragtui.model.conversation import SessionSummary
from ragtui.sanitize import one_line
from ragtui.textfit import clip_line


@runtime_checkable
class Switchable(Protocol):
    """What the switcher needs of the screen it was opened from (the main screen)."""

    collection_views: list[CollectionInfo]
    history_damage: str

    async def past_sessions(self) -> Sequence[SessionSummary]: ...

    def switch_collection(self, name: str) -> None: ...

    def open_session(self, session_id: int) -> object: ...


SWITCHER_PLACEHOLDER = "Switch to a collection or a past session…"
SESSIONS_LISTED = 200     # the newest sessions offered; older ones are in the history screen (h)


class SwitchCommands(Provider):
    """Entries: "Collection: NAME" (search only it) and "Session N: QUERY" (reopen it)."""

    async def startup(self) -> None:
        self.entries: list[tuple[str, str, Callable[[], Awaitable[object] | object]]] = []
        main = self.screen
        if not isinstance(main, Switchable):
            return
        for view in main.collection_views:
            name = one_line(view.name)
            state = f"{view.chunks:,} chunks, {view.state}"
            self.entries.append((f"Collection: {name}", f"search only {name} ({state})",
                                 partial(main.switch_collection, view.name)))
        for session in await self._sessions(main):
            text = f"Session {session.id}: {clip_line(one_line(session.query), 60)}"
            where = ", ".join(one_line(c) for c in session.collections)
            self.entries.append((text, f"reopen it ({session.created_at[:16].replace('T', ' ')} UTC, {where})",
                                 partial(main.open_session, session.id)))

    async def _sessions(self, main: Switchable) -> Sequence[SessionSummary]:
        if main.history_damage:
            return []
        try:
            return (await main.past_sessions())[:SESSIONS_LISTED]
        except Exception as exc:  # the history is optional here: the collections are still offered
            self.app.notify(f"History unavailable: {describe(exc)}", severity="error")
            return []

    async def discover(self) -> Hits:
        for text, help_text, run in self.entries:
            yield DiscoveryHit(Content(text), run, help=escape(help_text))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, run in self.entries:
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, highlight(matcher, text), run, help=escape(help_text))


def highlight(matcher: Matcher, text: str) -> Content:
    """`text` with the letters the query matched marked, as plain text: a past question such as "what is [1]?"
    is shown as written, never read as markup (Textual's own `Matcher.highlight` reads it as markup)."""
    content = Content(text)
    score, offsets = matcher.fuzzy_search.match(matcher.query, text)
    for offset in offsets if score else ():
        if not text[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content
