"""Every user action in one table: the bindings, the help screen and the command palette all read it.

An action lives on the app (global: themes, help, quit) or on the main screen (the research view). Its
key is the default; the `[keys]` table of the configuration (config.toml) names each action and may
give it other keys, which `config_keys.check_keys` checks as the settings load and Textual's keymap
applies (bindings carry the action's name as their id).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textual.binding import Binding
from textual.dom import DOMNode
from textual.keys import format_key

from ragtui.config import ConfigError, Settings
from ragtui.config_keys import KeyTable, check_keys

Scope = Literal["app", "main"]


@dataclass(frozen=True)
class Action:
    key: str                 # the default key, as Textual names it
    action: str              # action name (without "action_")
    title: str               # short, for the footer and the palette
    help: str                # one line, for the help screen and the palette
    footer: bool = True
    scope: Scope = "main"    # where the action is defined and bound
    name: str = ""           # its entry in the [keys] table; "" for the action's method name
    moves_focus: bool = False    # bound with priority (see the note above FIELD_TABS)

    @property
    def method(self) -> str:
        """The action's name without its arguments: `show_tab('all')` is `show_tab`."""
        return self.action.split("(", 1)[0]

    @property
    def id(self) -> str:
        """The action's entry in the [keys] table, and its bindings' id."""
        return self.name or self.method


ACTIONS: tuple[Action, ...] = (
    Action("slash", "focus_query", "Query", "Focus the query bar (enter runs it; up/down recall past queries)",
           footer=False, moves_focus=True),
    Action("s", "synthesize", "Synthesize", "Write the answer again from the current relevant sources",
           footer=False),
    Action("r", "reannotate_selected", "Re-annot.", "Re-annotate the selected source"),
    Action("R", "reannotate_all", "Re-annotate all", "Re-annotate every source", footer=False),
    Action("x", "toggle_source", "Rescue", "Rescue a filtered source, or drop a relevant one"),
    Action("c", "continue_answer", "Continue", "Continue an answer cut short or cancelled"),
    Action("N", "new_session", "New session",
           "Start a fresh session: the next query is not a follow-up of the current conversation", footer=False,
           moves_focus=True),
    Action("e", "edit_rewrite", "Edit rewrite",
           "Edit the follow-up's standalone rewrite and retrieve the turn again with it", footer=False),
    Action("left_square_bracket", "earlier_turn", "Earlier turn",
           "Show the previous turn's sources and answer", footer=False),
    Action("right_square_bracket", "later_turn", "Later turn", "Show the next turn's sources and answer",
           footer=False),
    Action("w", "details", "Why this source",
           "Details: how the selected source was found (keyword tier, IDF, synonyms, rank per leg)", footer=False),
    Action("m", "reannotate_with", "Re-annotate with…",
           "Re-annotate the selected or every source with another model or a prompt file", footer=False),
    Action("1", "show_tab('relevant')", "Relevant", "Sources: the Relevant tab", footer=False, name="tab_relevant",
           moves_focus=True),
    Action("2", "show_tab('filtered')", "Filtered", "Sources: the Filtered tab", footer=False, name="tab_filtered",
           moves_focus=True),
    Action("3", "show_tab('all')", "All", "Sources: the All tab", footer=False, name="tab_all", moves_focus=True),
    Action("f", "filter_sources", "Filter sources",
           "Filter the sources as you type: the rows holding every word (enter keeps it, esc clears it)", footer=False,
           moves_focus=True),
    Action("escape", "cancel", "Cancel", "Cancel running retrieval, annotation or synthesis", moves_focus=True),
    Action("ctrl+t", "research_run", "Research run",
           "Turn the query into a research run: a plan of sub-questions (edited before it runs), evidence for each, "
           "one cited report (works from the query bar)", footer=False),
    Action("X", "cancel_part", "Cancel sub-question",
           "Cancel the sub-question a research run is searching; the run goes on with the next", footer=False),
    Action("ctrl+g", "edit_question", "Edit question in $EDITOR",
           "Write the question in $VISUAL or $EDITOR (works from the query bar); saving it asks it", footer=False),
    Action("o", "open_answer", "Open answer in $EDITOR",
           "Open the answer, with the sources it cites, in $VISUAL or $EDITOR", footer=False),
    Action("y", "copy_answer", "Copy", "Copy the answer (OSC 52, also saved to a file)"),
    Action("Y", "copy_source", "Copy source", "Copy the selected source's text", footer=False),
    Action("v", "page_view", "Page", "The PDF page the selected source lies on, its chunk boxed in blue and the "
           "quote in red (also from the source viewer)", footer=False),
    Action("h", "history", "History", "Browse past sessions and reopen one"),
    Action("ctrl+o", "switcher", "Switch", "Quick switcher: type part of a collection's name (search only it) or of a "
           "past question (reopen its session)", footer=False),
    Action("i", "ingest", "Ingest", "Ingest a folder or file into a collection", footer=False),
    Action("n", "new_collection", "New coll.", "Create a new collection", footer=False),
    Action("ctrl+r", "refresh_collections", "Refresh", "Read the collections and their states again",
           footer=False),
    Action("b", "toggle_collections", "Collections pane", "Show or hide the collections pane", footer=False,
           moves_focus=True),
    Action("t", "next_theme", "Theme", "Switch to the next theme", footer=False, scope="app"),
    Action("exclamation_mark", "notices", "Notices", "Every notice of this run in full (toasts show one line)",
           footer=False, scope="app"),
    Action("question_mark", "help", "Help", "Show all keys", scope="app"),
    Action("q", "quit", "Quit", "Quit ragtui", footer=False, scope="app"),
)

# Keys handled by focused widgets rather than the app; listed on the help screen only.
WIDGET_KEYS: tuple[tuple[str, str], ...] = (
    ("enter", "In the query bar: run the query. On a source row: open it in the source viewer"),
    ("up / down", "In the query bar: recall earlier queries. In lists and tables: move"),
    ("space", "In the collections pane: toggle whether the collection is searched"),
    ("d / K / I", "In the collections pane: remove files from the collection (asks which) / build its keyword "
                  "index again from its records / show what `collections info` reports, its entropy histogram drawn"),
    ("tab / shift+tab", "Next / previous pane: collections, query, sources, answer. The one-letter keys act "
                        "on the panes, so they work there; in the query bar every key types"),
    ("e / d / o", "In the history screen: export the session as Markdown / delete it / open its export in $EDITOR"),
    ("b", "In the history screen: export the cited documents as BibTeX and CSL-JSON"),
    ("ctrl+p", "Command palette: every action above by name"),
)


# Keys the lists, tables and panes handle themselves (the vim motions among them, see MOTIONS): an action given one
# of them would never run where they are focused, so the [keys] table may not use them.
MOTION_KEYS: tuple[tuple[str, str], ...] = (
    ("j / k", "In lists, tables and the source viewer: down / up"),
    ("g / G", "In lists, tables and the source viewer: first / last"),
    ("ctrl+d / ctrl+u", "In lists, tables and the source viewer: half a page down / up"),
)
# Keys that move the focus are priority bindings. Textual gives a key to the widget focused when the app reads it,
# and checks priority bindings right then, before it hands on the keys read after it; an ordinary binding runs only
# once the focused widget has handled the key, by when the keys that came in the same read (fast typing, a paste,
# keys typed while the app was busy) were already given to the old focus: the text meant for the next field was
# appended to this one, and the question typed after `/` reached the sources pane's one-letter keys (its `h` opened
# the history). So tab / shift+tab in a dialog's fields and on the main screen, and the main screen's actions with
# `moves_focus`, which move the focus at once (Screen.set_focus, not Widget.focus, which waits its turn in the
# app's queue) and hand the key back to a focused widget that takes it itself (MainScreen.yield_key).
FIELD_TABS: tuple[Binding, ...] = (
    Binding("tab", "app.focus_next", "Next field", show=False, priority=True),
    Binding("shift+tab", "app.focus_previous", "Previous field", show=False, priority=True),
)
def key_display(key: str) -> str:
    """How a key is shown: `question_mark` as ?, `escape` as esc, `ctrl+r` as is."""
    *modifiers, base = key.split("+")
    return "+".join([*modifiers, format_key(base)])


def keys_display(keys: tuple[str, ...]) -> str:
    return " / ".join(key_display(k) for k in keys)


def defaults() -> dict[str, tuple[str, ...]]:
    return {a.id: (a.key,) for a in ACTIONS}


def resolve(settings: Settings) -> dict[str, tuple[str, ...]]:
    """Every action's keys from the [keys] table, checked by `config_keys.check_keys` (as the settings were when
    they loaded: a bad table never gets this far); a ConfigError naming the entries when it fails."""
    try:
        return check_keys(settings.keys, settings.origins)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def bind_own_keys(node: DOMNode, table: KeyTable) -> None:
    """Give the bindings `node` defines the keys of `table` itself, not only through the app's keymap: Textual
    drops, while a text field has the focus, every binding whose key the field would type, and it looks at the
    binding's default key before it applies the keymap (textual/screen.py, `Screen._binding_chain`). So help
    moved from `?` to `f1` did nothing from the query bar: the binding went with the `?` the bar types."""
    node._bindings.apply_keymap(keymap_overrides(table))


def keymap_overrides(table: KeyTable) -> dict[str, str]:
    """What Textual's keymap (App.set_keymap) needs: the actions whose keys differ from the default."""
    default = defaults()
    return {name: ",".join(keys) for name, keys in table.items() if keys != default[name]}


def bindings(scope: Scope) -> list[Binding | tuple[str, str] | tuple[str, str, str]]:
    """The bindings of the actions that live in `scope` (typed as Textual's BINDINGS), with their default keys."""
    return [Binding(a.key, a.action, a.title, show=a.footer, id=a.id, priority=a.moves_focus)
            for a in ACTIONS if a.scope == scope]
