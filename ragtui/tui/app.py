"""The ragtui application: themes, global keys, copying, and the engine the screens share.

The research view itself (panes, research handlers, dialogs it opens) is the
MainScreen (tui/screens/main.py), the app's one mode. The engine is
reached through `Engine` (tui/engine.py) and nothing else.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import App
from textual.notifications import SeverityLevel

from ragtui.config import Settings
from ragtui.tui import keymap
from ragtui.tui.clipboard import osc52, save_copy
from ragtui.tui.commands import RagtuiCommands
from ragtui.tui.engine import Engine
from ragtui.tui.messages import CopyRequested
from ragtui.tui.screens.main import MainScreen
from ragtui.tui.themes import DEFAULT_THEME, load_themes, shipped_themes_dir, user_themes_dir


class RagtuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "ragtui"
    BINDINGS: ClassVar = keymap.bindings("app")
    COMMANDS = App.COMMANDS | {RagtuiCommands}
    # The research view is the one mode, so Textual mounts it before the first frame (a default screen that
    # composes itself would paint blank first); its instance is installed under this name in __init__.
    MODES: ClassVar = {"research": "research"}
    DEFAULT_MODE = "research"

    def __init__(self, settings: Settings, *, in_tmux: bool = False, cursor_blink: bool = True,
                 start_workers: bool = True, theme_dirs: list[Path] | None = None,
                 ingest_on_start: tuple[Path, str] | None = None) -> None:
        """`in_tmux` wraps OSC 52 for tmux; `start_workers=False` skips the start-up probes (tests set state);
        `ingest_on_start` (path, collection) opens the ingest screen and starts it (the demo's first run)."""
        super().__init__()
        self.settings = settings
        self.engine = Engine(settings)
        self.in_tmux = in_tmux
        self.install_screen(MainScreen(settings, self.engine, cursor_blink=cursor_blink, start_workers=start_workers,
                                       ingest_on_start=ingest_on_start), "research")
        self.startup_notes: list[tuple[SeverityLevel, str]] = []
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

    # --- screens and copying --------------------------------------------------------------------

    def action_help(self) -> None:
        from ragtui.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen())

    @on(CopyRequested)
    def _copy_requested(self, message: CopyRequested) -> None:
        self.copy_text(message.text, message.what)

    def copy_text(self, text: str, what: str) -> None:
        """OSC 52 to the terminal's clipboard (wrapped inside tmux), and the same text saved to a file."""
        self._clipboard = text
        if self._driver is not None:
            self._driver.write(osc52(text, in_tmux=self.in_tmux))
        try:
            path = save_copy(text, self.settings.data_dir)
        except OSError as exc:
            self.notify(f"Copied {what} (OSC 52); saving a copy failed: {exc.strerror}", severity="warning")
            return
        self.notify(f"Copied {what} ({len(text)} chars, OSC 52); also saved to {path}", timeout=6)

    def copy_to_clipboard(self, text: str) -> None:
        """Textual's copy of a mouse selection goes the same way as ours."""
        self.copy_text(text, "selection")


def run_app(settings: Settings, ingest_on_start: tuple[Path, str] | None = None) -> int:
    """Open the TUI; the one place that looks at $TMUX (for OSC 52 passthrough)."""
    app = RagtuiApp(settings, in_tmux=bool(os.environ.get("TMUX")), ingest_on_start=ingest_on_start)
    try:
        app.run()
    finally:
        app.engine.close()
    return 0
