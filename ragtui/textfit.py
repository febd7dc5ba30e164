"""Fitting text into terminal cells, for both front ends: paths shortened from the middle, one-line clips, the
annotation's irrelevance marker hidden, PDF soft line breaks reflowed."""

from __future__ import annotations

import re

from ragtui.sanitize import clean

ELLIPSIS = "…"


def shorten_middle(path: str, width: int) -> str:
    """`path` in at most `width` cells, cut in the middle so both its first folders and its file name stay:
    `_sources/whatsnew/3.6.rst.txt` in 20 cells is `_sources/…/3.6.rst.txt`-like, never just the file name."""
    if len(path) <= width:
        return path
    if width <= 1:
        return ELLIPSIS[:width]
    name = path.rsplit("/", 1)[-1]
    if len(name) + 2 >= width:            # not even the name fits with a folder: keep the name's end
        return ELLIPSIS + path[-(width - 1):]
    head = width - 1 - len(name)           # the rest goes to the start of the path
    return path[:head] + ELLIPSIS + name


def clip_line(text: str, width: int) -> str:
    """Untrusted text on one line: escape sequences and controls removed (`sanitize.clean`), whitespace folded
    to single spaces, clipped to `width` cells with an ellipsis."""
    line = " ".join(clean(text).split())
    return line if len(line) <= width else line[: max(width - 1, 0)] + ELLIPSIS


def without_irrelevant_marker(text: str, marker: re.Pattern[str]) -> str:
    """An annotation with the irrelevance marker (annotation.irrelevant_re) taken out, as readers see it:
    `[IRRELEVANT!!!] Off topic.` becomes `Off topic.`; the state column already says "irrelevant"."""
    cleaned = marker.sub("", text)
    cleaned = re.sub(r"[\[(]\s*[\])]", "", cleaned)     # brackets the marker sat in
    return " ".join(cleaned.split()).lstrip(" -:;,.")


_SOFT_BREAK = re.compile(r"(?<=[^\s.:;!?])\n(?=[a-z(\"'“‘,;])")


def reflow(text: str) -> str:
    """PDF text with its soft line breaks (a line that runs on into the next in mid-sentence) made spaces,
    so a paragraph wraps to the screen instead of to the page it came from. The length stays the same, so
    chunk offsets into the text still hold; paragraph breaks, list items and headings stay."""
    return _SOFT_BREAK.sub(" ", text)
