"""Command palette provider: every action in the keymap, searchable by name and description."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from ragtui.tui.keymap import ACTIONS


class RagtuiCommands(Provider):
    async def discover(self) -> Hits:
        for action in ACTIONS:
            yield DiscoveryHit(f"{action.title} ({action.display})", self._runner(action.action), help=action.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for action in ACTIONS:
            name = f"{action.title} ({action.display})"
            score = max(matcher.match(name), matcher.match(action.help) * 0.5)
            if score > 0:
                yield Hit(score, matcher.highlight(name), self._runner(action.action), help=action.help)

    def _runner(self, action: str):
        return partial(self.app.run_action, action)
