"""Copying text out of a terminal app: OSC 52 (works over SSH), wrapped for tmux, plus a file fallback.

Terminals answer nothing to OSC 52, so the app cannot know whether a copy worked;
every copy is therefore also written to a file whose path the user is shown.
"""

from __future__ import annotations

import base64
from pathlib import Path


def osc52(text: str, *, in_tmux: bool) -> str:
    """The escape sequence that puts text on the system clipboard; inside tmux, wrapped for passthrough."""
    payload = base64.b64encode(text.encode("utf-8")).decode("ascii")
    sequence = f"\x1b]52;c;{payload}\a"
    if in_tmux:
        return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return sequence


def save_copy(text: str, directory: Path, name: str = "clipboard.md") -> Path:
    """Write the copied text to a file the user can open when the terminal ignores OSC 52."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path
