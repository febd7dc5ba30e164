"""The one root of every error the engine raises for the user to read.

A `RagtuiError` already reads as one line that says what went wrong (its
message) and what to do (its hint); the CLI prints it once and exits with its
`exit_code`, the TUI shows it once. Anything else that escapes is a bug and is
described with its type name so it can be reported.
"""

from __future__ import annotations


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
