"""The ragtui application: themes, global keys, copying, and the workspace the screens share.

The main screen (tui/screens/main.py) is the app's one mode; the research itself
is its ResearchView (tui/widgets/research.py). The engine is reached through
tui/engine_door.py (`AsyncWorkspace` and the few functions listed there) and nothing else.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import ClassVar

from textual import events, on
from textual.app import App
from textual.notifications import Notify, SeverityLevel

from ragtui.config import Settings
from ragtui.errors import describe
from ragtui.sanitize import clean, one_line
from ragtui.textfit import clip_line
from ragtui.tui import keymap, page_graphics
from ragtui.tui.clipboard import ask_tmux, clipboard_sequences, save_copy
from ragtui.tui.commands import RagtuiCommands
from ragtui.tui.engine_door import AsyncWorkspace
from ragtui.tui.messages import CopyRequested
from ragtui.tui.screens.main import MainScreen
from ragtui.tui.screens.notices import LoggedNotice, NoticesScreen
from ragtui.tui.switcher import SwitchCommands
from ragtui.tui.themes import DEFAULT_THEME, load_themes, shipped_themes_dir, user_themes_dir

TOAST_SECONDS: dict[SeverityLevel, float] = {"information": 4, "warning": 6, "error": 8}


class RagtuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "ragtui"
    BINDINGS: ClassVar = keymap.bindings("app")
    COMMANDS = App.COMMANDS | {RagtuiCommands, SwitchCommands}
    # The research view is the one mode, so Textual mounts it before the first frame (a default screen that
    # composes itself would paint blank first); its instance is installed under this name in __init__.
    MODES: ClassVar = {"research": "research"}
    DEFAULT_MODE = "research"

    def __init__(self, settings: Settings, *, in_tmux: bool = False, cursor_blink: bool = True,
                 start_workers: bool = True, theme_dirs: list[Path] | None = None,
                 ingest_on_start: tuple[Path, str] | None = None) -> None:
        """`in_tmux`: a copy asks tmux which OSC 52 forms it passes on; `start_workers=False` skips the start-up
        probes (tests set state); `ingest_on_start` (path, collection) opens the ingest screen and starts it
        (the demo's first run)."""
        super().__init__()
        self.settings = settings
        self.keys = keymap.resolve(settings)    # a bad [keys] entry stops the start here: a config error (exit 2)
        self.set_keymap(keymap.keymap_overrides(self.keys))
        keymap.bind_own_keys(self, self.keys)
        self.workspace = AsyncWorkspace(settings)
        # asked before Textual owns the terminal's input (the terminal's replies would reach it as keys)
        self.page_graphics = page_graphics.choose(settings.ui.page_graphics)
        self.in_tmux = in_tmux
        self.install_screen(MainScreen(settings, self.workspace, keys=self.keys, cursor_blink=cursor_blink,
                                       start_workers=start_workers, ingest_on_start=ingest_on_start), "research")
        self.startup_notes: list[tuple[SeverityLevel, str]] = []
        self.notices: list[LoggedNotice] = []
        self.theme_names: list[str] = []
        self._load_themes(theme_dirs if theme_dirs is not None else [shipped_themes_dir(), user_themes_dir()])

    def on_mount(self) -> None:
        for level, message in self.startup_notes:
            self.notify(message, severity=level, timeout=15)

    # --- themes -----------------------------------------------------------------------

    def _load_themes(self, directories: list[Path]) -> None:
        themes, errors = load_themes(directories)
        for theme in themes:
            self.register_theme(theme)
        self.theme_names = [t.name for t in themes]
        self.startup_notes += [("error", e) for e in errors]
        wanted = self.settings.ui.theme
        if wanted in self.available_themes:
            self.theme = wanted
            return
        if DEFAULT_THEME in self.available_themes:
            self.theme = DEFAULT_THEME
        self.startup_notes.append(("warning", f"theme {wanted!r} not found (ui.theme); using {self.theme}. "
                                              f"Available: {', '.join(self.theme_names)}"))

    def action_next_theme(self) -> None:
        names = self.theme_names or [self.theme]
        self.theme = names[(names.index(self.theme) + 1) % len(names)] if self.theme in names else names[0]
        self.notify(f"Theme: {self.theme}", timeout=2)

    # --- notices ---------------------------------------------------------------------------

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every notice goes to the notices log (! shows it whole); its toast is one line, alone (the one
        before is cleared), brief, and sits over the query bar's top border, so it never covers the answer.
        Messages are plain text: brackets from documents or errors (`[llm]`) are shown, never read as markup,
        and escape sequences in them are removed (`sanitize.clean`), in the toast and in the log alike."""
        message = clean(message)
        self.notices.append(LoggedNotice(time.strftime("%H:%M:%S"), severity, message))
        room = max(20, self.size.width * 6 // 10 - 6)   # the toast: 60% of the width, less padding and edges
        line = clip_line(message, room)
        if line != " ".join(message.split()):
            line = clip_line(message, room - 8) + " (! all)"
        seconds = TOAST_SECONDS[severity] if timeout is None else min(timeout, TOAST_SECONDS[severity])
        super().notify(line, title="", severity=severity, timeout=seconds, markup=False)

    def _on_notify(self, event: Notify) -> None:
        """One toast at a time: a new notice replaces the one shown (Textual adds toasts here, a message
        after notify(), so this is where the earlier one is dropped)."""
        self._notifications.clear()
        self.screen.query("ToastHolder").remove()   # Textual's rack removes a stale toast but not its holder
        super()._on_notify(event)

    def action_notices(self) -> None:
        self.push_screen(NoticesScreen(self.notices))

    # --- screens and copying --------------------------------------------------------------------

    def action_help(self) -> None:
        from ragtui.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen(self.keys))

    @on(CopyRequested)
    def _copy_requested(self, message: CopyRequested) -> None:
        self.copy_text(message.text, message.what)

    def copy_text(self, text: str, what: str) -> None:
        """OSC 52 in the forms the terminal (or the tmux we run in) accepts, and the text written to a file.

        The terminal never confirms a copy, so the message says what was sent and where the file is."""
        self._clipboard = text
        tmux = ask_tmux() if self.in_tmux else None
        sequences = clipboard_sequences(text, tmux)
        if self._driver is not None and sequences:
            self._driver.write(sequences)
        try:
            where, saved = f"written to {save_copy(text, self.settings.data_dir)}", True
        except OSError as exc:
            where, saved = f"not written to a file: {exc.strerror}", False
        if not sequences:
            self.notify(f"Not sent to the clipboard: {tmux.describe() if tmux else 'tmux'} passes no OSC 52 "
                        f"(set -g set-clipboard on). {what.capitalize()} {where}", severity="warning")
            return
        via = f"OSC 52 via {tmux.describe()}" if tmux else "OSC 52"
        self.notify(f"Sent {what} to the clipboard ({len(text)} chars, {via}; terminals do not confirm); {where}",
                    severity="information" if saved else "warning")

    @on(events.DeliveryFailed)
    def _not_delivered(self, event: events.DeliveryFailed) -> None:
        """A file `deliver_binary` could not hand to the browser (`ragtui serve`: the page view's full size)."""
        self.notify(one_line(f"Could not hand the file to the browser: {describe(event.exception)}"),
                    severity="error")

    def copy_to_clipboard(self, text: str) -> None:
        """Textual's copy of a mouse selection goes the same way as ours."""
        self.copy_text(text, "selection")


def run_app(settings: Settings, ingest_on_start: tuple[Path, str] | None = None) -> int:
    """Open the TUI; the one place that looks at $TMUX (for OSC 52 passthrough). The exit code: 0, or
    Textual's non-zero return code after an unhandled exception, with one line saying so under the
    traceback Textual prints (its locals hold no secret in clear: `config.Secret`)."""
    app = RagtuiApp(settings, in_tmux=bool(os.environ.get("TMUX")), ingest_on_start=ingest_on_start)
    try:
        app.run()
    finally:
        app.workspace.close()
    if app.return_code:
        # Textual keeps the exception only privately; it is read here for the one line, nothing else
        error = getattr(app, "_exception", None)
        cause = f" ({one_line(describe(error))})" if error is not None else ""
        print(f"ragtui: the terminal UI stopped on an unexpected error{cause}; the traceback is above. "
              "Please report it.", file=sys.stderr)
        return app.return_code
    return 0
