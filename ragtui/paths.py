"""Paths the user typed (a command-line argument, a setting, a dialog field)."""

from __future__ import annotations

from pathlib import Path


def user_path(text: str | Path) -> Path:
    """`text` with a leading `~` or `~user` expanded; left as typed when there is no such user or home (as a
    shell leaves `~nosuchuser`): `Path.expanduser` raises RuntimeError there, which had crashed the CLI."""
    path = Path(text)
    try:
        return path.expanduser()
    except RuntimeError:
        return path
