"""Paths the user typed (a command-line argument, a setting, a dialog field), and the one way to read a small
file the user names (a prompt template, a session bundle)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ragtui.errors import RagtuiError

SMALL_FILE_BYTES = 64 * 1024     # a prompt template is a paragraph or two; more is a mistake or an attack


class UnreadableFile(RagtuiError):
    """A file the user named that cannot be what they meant: missing, not a regular file, too big, not UTF-8."""

    exit_code = 2


def user_path(text: str | Path) -> Path:
    """`text` with a leading `~` or `~user` expanded; left as typed when there is no such user or home (as a
    shell leaves `~nosuchuser`): `Path.expanduser` raises RuntimeError there, which had crashed the CLI."""
    path = Path(text)
    try:
        return path.expanduser()
    except RuntimeError:
        return path


def read_small_text(path: Path, limit: int = SMALL_FILE_BYTES, what: str = "a prompt file") -> str:
    """The UTF-8 text of the regular file at `path`, of at most `limit` bytes (`what` the file is, for the
    error); UnreadableFile naming the file otherwise. The kind is checked on the opened descriptor, opened
    with O_NONBLOCK so that a FIFO with no writer does not hang the open, and the cap holds for the bytes read
    (a device such as /dev/zero has no size to stat)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError) as exc:        # ValueError: a name no file can have (a NUL byte)
        raise UnreadableFile(f"cannot read {path} ({getattr(exc, 'strerror', None) or exc})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnreadableFile(f"{path} is not a regular file")
    with os.fdopen(fd, "rb") as file:
        data = file.read(limit + 1)
        if len(data) > limit:
            size = max(os.fstat(fd).st_size, len(data))
            raise UnreadableFile(f"{path} is {size / 2**20:.1f} MiB, more than the {limit // 1024} KiB "
                                 f"{what} may hold")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"{path} is not UTF-8 text (byte {exc.start})") from None
