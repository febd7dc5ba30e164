"""The blocks a chunk must not cut: code fences, tables with their caption and header row, list items.

Found line by line in the extracted text (markdown, and what the extractors write:
HTML `<pre>` as fences, table rows of HTML, PDF, csv and spreadsheets as cells
joined by " | "). A block that fits a chunk is one unit; a longer fence or table
is split at line ends into parts that fit, and a chunk that begins at a later
part repeats the block's `lead` (the fence's opening line, the table's caption
and header row) while one that ends before the last part of a fence closes it
(`tail`), so every piece is still a fenced block or a table with its header. A
list item longer than a chunk is left to the window's sentence cuts.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from ragtui.ingest.chunking import FENCE, HEADING, code_fences

_ITEM = re.compile(r"^[ \t]*(?:[-*+•▪◦‣]|\d{1,3}[.)])(?:[ \t]+|$)")
_DELIMITER_ROW = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$")
_TABLE_CAPTION = re.compile(r"^[ \t]*(?:table|tab\.)\s*[\w.:-]*", re.I)
SENTENCE_END = ".!?:;"      # a line ending so is not continued by the unindented line after it
FENCED_FORMATS = frozenset(("md", "html"))   # formats whose ``` and ~~~ lines are code fences
# Formats whose text is source code or data, not prose with tables and lists: chunked by the plain window
# (a shell pipe or a type union there is no table).
UNSTRUCTURED = frozenset(("code", "json"))
CAPTION_MAX = 200          # characters: a longer line above a table is prose, not its caption
LEAD_SHARE = 4             # a lead longer than 1/4 of a chunk is not repeated (the parts still split at lines)


@dataclass(frozen=True)
class Part:
    """One unit a window never cuts: a whole block, or one part of a block longer than a chunk."""

    start: int
    end: int
    kind: str              # "fence", "table" or "item"
    lead: str = ""         # repeated before the part when a chunk begins with it ("" for a whole or first part)
    tail: str = ""         # appended when a chunk ends with it ("" unless a later part of the fence follows)


def table_row(line: str) -> bool:
    """Cells joined by " | " (as the extractors write them), a markdown row "| a | b |", or a markdown
    delimiter row ("---|:--:")."""
    s = line.strip()
    cells = " | " in s or (len(s) > 1 and s[0] == "|" and s[-1] == "|")
    return (cells or ("|" in s and bool(_DELIMITER_ROW.match(s)))) and not HEADING.match(line)


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line, the end past its newline."""
    out, at, stop = [], 0, len(text)
    while at < stop:
        nl = text.find("\n", at)
        end = stop if nl < 0 else nl + 1
        out.append((at, end))
        at = end
    return out


def format_parts(text: str, chars: int, fmt: str) -> list[Part]:
    """`parts` as a file of format `fmt` has them: none in code and data (UNSTRUCTURED), code fences only in
    FENCED_FORMATS."""
    return [] if fmt in UNSTRUCTURED else parts(text, chars, fmt in FENCED_FORMATS)


def parts(text: str, chars: int, fences: bool = True) -> list[Part]:
    """The units of the text that a window of `chars` characters must keep whole, in order; code fences
    only with `fences` (markdown, and HTML whose <pre> the extractor fenced: elsewhere a line of ~~~ or ```
    is an underline or a quote, and an unclosed one would swallow the rest of the text)."""
    lines = _lines(text)
    fence_ends = dict(code_fences(text)) if fences else {}
    out: list[Part] = []
    i = 0
    while i < len(lines):
        a, b = lines[i]
        line = text[a:b]
        if (m := FENCE.match(line)) and a in fence_ends:
            j = _line_at(lines, i, fence_ends[a])
            marker = m.group(1)
            out.extend(_split(text, lines[i:j], chars, "fence", lead=line if line.endswith("\n") else line + "\n",
                              tail="\n" + marker))
            i = j
        elif table_row(line) and i + 1 < len(lines) and table_row(text[slice(*lines[i + 1])]):
            j = i
            while j < len(lines) and table_row(text[slice(*lines[j])]):
                j += 1
            head = i + 2 if _DELIMITER_ROW.match(text[slice(*lines[i + 1])]) else i + 1
            cap = _caption(text, lines, i, out)
            lead = text[lines[cap][0]:lines[head - 1][1]]
            out.extend(_split(text, lines[cap:j], chars, "table", lead=lead if lead.endswith("\n") else lead + "\n",
                              tail="", first=head - cap))
            i = j
        elif _ITEM.match(line) and line.strip():
            j = _item_end(text, lines, i)
            if lines[j - 1][1] - a <= chars:
                out.append(Part(a, lines[j - 1][1], "item"))
            i = j
        else:
            i += 1
    return out


def _line_at(lines: list[tuple[int, int]], i: int, end: int) -> int:
    """Index of the first line at or after `i` that starts at or past `end`."""
    while i < len(lines) and lines[i][0] < end:
        i += 1
    return i


def _caption(text: str, lines: list[tuple[int, int]], i: int, before: list[Part]) -> int:
    """Index of the table's caption line: the short line right above its first row, or a "Table ..." line
    one blank line above it; `i` itself when there is none (or that line already belongs to a block)."""
    taken = before[-1].end if before else 0
    for k, blank_ok in ((i - 1, False), (i - 2, True)):
        if k < 0 or lines[k][0] < taken:
            return i
        line = text[slice(*lines[k])]
        if blank_ok and text[slice(*lines[i - 1])].strip():
            return i
        if (line.strip() and len(line) <= CAPTION_MAX and not FENCE.match(line) and not _ITEM.match(line)
                and (not blank_ok or _TABLE_CAPTION.match(line))):
            return k
    return i


def _item_end(text: str, lines: list[tuple[int, int]], i: int) -> int:
    """Index past a list item: its indented lines, the unindented ones that continue an unfinished
    sentence (a wrapped line, as PDF text has them), and after a blank line the lines indented under it."""
    j = i + 1
    while j < len(lines):
        line = text[slice(*lines[j])]
        if not line.strip():
            nxt = text[slice(*lines[j + 1])] if j + 1 < len(lines) else ""
            if nxt.strip() and nxt[:1] in " \t" and not _ITEM.match(nxt):
                j += 1
                continue
            return j
        if _ITEM.match(line) or FENCE.match(line) or HEADING.match(line) or table_row(line):
            return j
        if line[:1] not in " \t" and text[lines[j - 1][0]:lines[j - 1][1]].rstrip()[-1:] in SENTENCE_END:
            return j
        j += 1
    return j


def _split(text: str, lines: list[tuple[int, int]], chars: int, kind: str, lead: str, tail: str,
           first: int = 1) -> list[Part]:
    """A block as one part when it fits in `chars`, else parts cut at line ends (the first part holding at
    least the `first` lines of its lead), each later one carrying `lead` and each but the last `tail`.

    A single line longer than a part is cut at the budget (a table row or code line of thousands of
    characters: the chunk stays bounded)."""
    a, b = lines[0][0], lines[-1][1]
    if b - a <= chars:
        return [Part(a, b, kind)]
    if len(lead) + len(tail) > chars // LEAD_SHARE:
        lead, tail = "", ""
    budget = max(1, chars - len(lead) - len(tail))
    cuts = [a]
    size_from = a
    for k, (la, lb) in enumerate(lines):
        if k >= first and la > size_from and lb - size_from > budget:
            cuts.append(la)
            size_from = la
        while lb - size_from > budget:            # one line longer than a part
            size_from += budget
            cuts.append(size_from)
    cuts.append(b)
    spans = [(x, y) for x, y in itertools.pairwise(cuts) if y > x]
    last = len(spans) - 1
    return [Part(x, y, kind, lead if k else "", tail if k < last else "") for k, (x, y) in enumerate(spans)]
