"""Copying text out of a terminal app: OSC 52 (works over SSH), in the form the running tmux accepts,
plus a file every copy is written to.

Terminals answer nothing to OSC 52, so the app cannot know whether a copy reached the
clipboard; what it can know is what tmux passes on. tmux takes a plain OSC 52 when its
`set-clipboard` option is `on` (it then sets its buffer and tells the outer terminal),
and passes a wrapped one (`ESC P tmux; ... ESC \\`) through when `allow-passthrough` is
on. So inside tmux we ask it for both options and send the forms it accepts; when it
does not answer, both forms.
"""

from __future__ import annotations

import base64
import subprocess
from dataclasses import dataclass
from pathlib import Path

TMUX_TIMEOUT_S = 2.0


def osc52(text: str, *, in_tmux: bool) -> str:
    """The escape sequence that puts text on the system clipboard; `in_tmux`: wrapped for tmux passthrough."""
    payload = base64.b64encode(text.encode("utf-8")).decode("ascii")
    sequence = f"\x1b]52;c;{payload}\a"
    if in_tmux:
        return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return sequence


@dataclass(frozen=True)
class TmuxClipboard:
    """What the running tmux does with OSC 52; None where tmux did not say."""

    set_clipboard: str | None      # "on", "external" or "off"
    passthrough: str | None        # "on", "all" or "off" (tmux 3.3+)

    @property
    def plain(self) -> bool:
        """Send the plain form: tmux takes it (set-clipboard on), or we do not know."""
        return self.set_clipboard in (None, "on")

    @property
    def wrapped(self) -> bool:
        """Send the wrapped form: tmux passes it through, or we do not know (a tmux before 3.3 has no
        allow-passthrough option and always passes it)."""
        return self.passthrough in (None, "on", "all")

    def describe(self) -> str:
        return f"tmux set-clipboard {self.set_clipboard or '?'}, allow-passthrough {self.passthrough or '?'}"


def tmux_option(name: str) -> str | None:
    """A global tmux option's value from the tmux we run in, or None when tmux does not answer."""
    try:
        done = subprocess.run(["tmux", "show-options", "-gv", name], capture_output=True, text=True,
                              timeout=TMUX_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def ask_tmux() -> TmuxClipboard:
    return TmuxClipboard(tmux_option("set-clipboard"), tmux_option("allow-passthrough"))


def clipboard_sequences(text: str, tmux: TmuxClipboard | None) -> str:
    """What to write to the terminal to copy `text`: plain OSC 52 outside tmux; inside, the forms it accepts
    (nothing when it accepts neither)."""
    if tmux is None:
        return osc52(text, in_tmux=False)
    return (osc52(text, in_tmux=False) if tmux.plain else "") + (osc52(text, in_tmux=True) if tmux.wrapped else "")


def save_copy(text: str, directory: Path, name: str = "clipboard.md") -> Path:
    """Write the copied text to a file the user can open when the terminal ignores OSC 52."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path
