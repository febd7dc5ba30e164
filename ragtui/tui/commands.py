"""Command palette provider: the keymap's actions, searchable by name and description.

An action of the main screen is offered where the palette was opened from that screen,
as its key works only there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode

from ragtui.tui.keymap import ACTIONS, Action, defaults, keys_display


class RagtuiCommands(Provider):
    def _name(self, action: Action) -> str:
        """The action's title and its keys as the [keys] table gives them."""
        keys = getattr(self.app, "keys", None) or defaults()
        return f"{action.title} ({keys_display(keys[action.id])})"

    def _target(self, action: Action) -> DOMNode:
        return self.app if action.scope == "app" else self.screen

    def _actions(self) -> list[Action]:
        return [a for a in ACTIONS if hasattr(self._target(a), f"action_{a.method}")]

    async def discover(self) -> Hits:
        for action in self._actions():
            yield DiscoveryHit(self._name(action), self._runner(action), help=action.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for action in self._actions():
            name = self._name(action)
            score = max(matcher.match(name), matcher.match(action.help) * 0.5)
            if score > 0:
                yield Hit(score, matcher.highlight(name), self._runner(action), help=action.help)

    def _runner(self, action: Action) -> Callable[[], Awaitable[object]]:
        return partial(self.app.run_action, action.action, self._target(action))
