"""Every user action in one table: the bindings, the help screen and the command palette all read it.

An action lives on the app (global: themes, help, quit) or on the main screen (the research view).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textual.binding import Binding

Scope = Literal["app", "main"]


@dataclass(frozen=True)
class Action:
    key: str                 # Textual key name
    display: str             # how the key is shown
    action: str              # action name (without "action_")
    title: str               # short, for the footer and the palette
    help: str                # one line, for the help screen and the palette
    footer: bool = True
    scope: Scope = "main"    # where the action is defined and bound

    @property
    def method(self) -> str:
        """The action's name without its arguments: `show_tab('all')` is `show_tab`."""
        return self.action.split("(", 1)[0]


ACTIONS: tuple[Action, ...] = (
    Action("slash", "/", "focus_query", "Query", "Focus the query bar (enter runs it; up/down recall past queries)",
           footer=False),
    Action("s", "s", "synthesize", "Synthesize", "Write the answer again from the current relevant sources",
           footer=False),
    Action("r", "r", "reannotate_selected", "Re-annot.", "Re-annotate the selected source"),
    Action("R", "R", "reannotate_all", "Re-annotate all", "Re-annotate every source", footer=False),
    Action("x", "x", "toggle_source", "Rescue", "Rescue a filtered source, or drop a relevant one"),
    Action("c", "c", "continue_answer", "Continue", "Continue an answer that stopped at max tokens"),
    Action("N", "N", "new_session", "New session",
           "Start a fresh session: the next query is not a follow-up of the current conversation", footer=False),
    Action("e", "e", "edit_rewrite", "Edit rewrite",
           "Edit the follow-up's standalone rewrite and retrieve the turn again with it", footer=False),
    Action("left_square_bracket", "[", "earlier_turn", "Earlier turn",
           "Show the previous turn's sources and answer", footer=False),
    Action("right_square_bracket", "]", "later_turn", "Later turn", "Show the next turn's sources and answer",
           footer=False),
    Action("w", "w", "details", "Why this source",
           "Details: how the selected source was found (keyword tier, IDF, synonyms, rank per leg)", footer=False),
    Action("m", "m", "reannotate_with", "Re-annotate with…",
           "Re-annotate the selected or every source with a model Ollama lists, or a prompt file", footer=False),
    Action("1", "1", "show_tab('relevant')", "Relevant", "Sources: the Relevant tab", footer=False),
    Action("2", "2", "show_tab('filtered')", "Filtered", "Sources: the Filtered tab", footer=False),
    Action("3", "3", "show_tab('all')", "All", "Sources: the All tab", footer=False),
    Action("escape", "esc", "cancel", "Cancel", "Cancel running retrieval, annotation or synthesis"),
    Action("y", "y", "copy_answer", "Copy", "Copy the answer (OSC 52, also saved to a file)"),
    Action("Y", "Y", "copy_source", "Copy source", "Copy the selected source's text", footer=False),
    Action("h", "h", "history", "History", "Browse past sessions and reopen one"),
    Action("i", "i", "ingest", "Ingest", "Ingest a folder or file into a collection", footer=False),
    Action("n", "n", "new_collection", "New coll.", "Create a new collection", footer=False),
    Action("ctrl+r", "ctrl+r", "refresh_collections", "Refresh", "Read the collections and their states again",
           footer=False),
    Action("b", "b", "toggle_collections", "Collections pane", "Show or hide the collections pane", footer=False),
    Action("t", "t", "next_theme", "Theme", "Switch to the next theme", footer=False, scope="app"),
    Action("exclamation_mark", "!", "notices", "Notices", "Every notice of this run in full (toasts show one line)",
           footer=False, scope="app"),
    Action("question_mark", "?", "help", "Help", "Show all keys", scope="app"),
    Action("q", "q", "quit", "Quit", "Quit ragtui", footer=False, scope="app"),
)

# Keys handled by focused widgets rather than the app; listed on the help screen only.
WIDGET_KEYS: tuple[tuple[str, str], ...] = (
    ("enter", "In the query bar: run the query. On a source row: open it in the source viewer"),
    ("up / down", "In the query bar: recall earlier queries. In lists and tables: move"),
    ("space", "In the collections pane: toggle whether the collection is searched"),
    ("tab / shift+tab", "Next / previous pane: collections, query, sources, answer. The one-letter keys act "
                        "on the panes, so they work there; in the query bar every key types"),
    ("e / d", "In the history screen: export the session as Markdown / delete it"),
    ("b", "In the history screen: export the cited documents as BibTeX and CSL-JSON"),
    ("ctrl+p", "Command palette: every action above by name"),
)


def bindings(scope: Scope) -> list[Binding | tuple[str, str] | tuple[str, str, str]]:
    """The bindings of the actions that live in `scope` (typed as Textual's BINDINGS)."""
    return [Binding(a.key, a.action, a.title, show=a.footer, key_display=a.display)
            for a in ACTIONS if a.scope == scope]
