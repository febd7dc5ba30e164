"""The conversation bar: which turn the panes show, and what a follow-up was also retrieved as.

Hidden while a session has a single turn, so a one-question session looks as it
always did. Model and document text go in as plain Text, never as markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ragtui.sanitize import clean, one_line


class TurnBar(Static):
    def show_turn(self, index: int, total: int, question: str, rewrite: str = "", rewrite_by: str = "") -> None:
        self.display = total > 1
        text = Text()
        text.append(f"Turn {index} of {total}", style="bold")
        text.append(f": {' '.join(clean(question).split())}")
        if rewrite:
            by = "edited by you" if rewrite_by == "user" else f"by {one_line(rewrite_by)}" if rewrite_by else ""
            text.append(f"\nalso retrieved as: {' '.join(clean(rewrite).split())}" + (f" ({by})" if by else ""),
                        style="italic")
        text.append("   [ ] turns · e edit rewrite · N new session", style="dim")
        self.update(text)

    def hide(self) -> None:
        self.display = False
        self.update("")
