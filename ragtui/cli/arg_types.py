"""argparse types for the numbers a user types: checked where they are parsed, so a bad one is a usage error
(exit 2) before anything opens."""

from __future__ import annotations

import argparse

from ragtui.history import RECORD_ID_MAX


def positive(value: str) -> int:
    """A whole number of at least 1 (a count of things to print)."""
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return int(value)


def record_id(value: str) -> int:
    """A session id, a source's [N] or a listing limit: a whole number the history store can bind."""
    if not value.isdigit() or not 1 <= int(value) <= RECORD_ID_MAX:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {RECORD_ID_MAX}, got {value!r}")
    return int(value)


def add_filter_argument(parser: argparse.ArgumentParser) -> None:
    """`-f/--filter`, the same on every command that searches (ragtui.model.filters reads the values)."""
    parser.add_argument("-f", "--filter", action="append", default=[], metavar="FILTER",
                        help="search only part of the collections: path:GLOB (a file, a folder/, *.pdf) or "
                             "heading:WORDS; repeat to widen one kind, combine kinds to narrow")
