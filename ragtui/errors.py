"""The one root of every error the engine raises for the user to read.

A `RagtuiError` already reads as one line that says what went wrong (its
message) and what to do (its hint); the CLI prints it once and exits with its
`exit_code`, the TUI shows it once. Anything else that escapes is a bug and is
described with its type name so it can be reported.
"""

from __future__ import annotations

import errno
import sqlite3


class RagtuiError(Exception):
    """An error meant for the user: one line, an optional hint, and the exit code the CLI returns."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str = "", exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return f"{self.message}; {self.hint}" if self.hint else self.message


def describe(exc: BaseException) -> str:
    """One line for the user: our own errors as they read, anything else with its type name."""
    if isinstance(exc, RagtuiError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())


# What a full disk (or an exhausted quota) looks like from the libraries under the stores, which do not all
# keep the OSError: SQLite says SQLITE_FULL, Chroma's Rust core passes the text on.
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_FULL_TEXTS = ("no space left on device", "database or disk is full", "disk quota exceeded")


def disk_full(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from or during, says the disk is full."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _FULL_ERRNOS:
            return True
        if isinstance(current, sqlite3.Error) and getattr(current, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            return True
        if any(text in str(current).lower() for text in _FULL_TEXTS):
            return True
        current = current.__cause__ or current.__context__
    return False
