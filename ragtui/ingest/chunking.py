"""Where chunks start and end: a boundary-aware sliding window and the markdown section split.

Pure functions over character offsets, so every chunk keeps exact offsets into the
extracted document (the source viewer highlights the chunk there). The LlamaIndex
node parser that applies them is `transforms.ChunkParser`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragtui.text import CJK_CLASS, is_cjk

CHARS_PER_TOKEN = 4
SENTENCE_LOOKBACK = 200
SPACE_LOOKBACK = 50
SENTENCE_ENDS = ".!?\n。！？"
# Where a sentence starts: after . ! ? (and closing quotes/brackets) plus whitespace, after a CJK
# full stop, or after a blank line; the match ends at the sentence's first character.
_SENTENCE_START = re.compile(r"""(?:[.!?]["'”’)\]]*\s+|[。！？]\s*|\n[ \t]*\n\s*)(?=\S)""")

# Where a word begins: a visible character at the start or after whitespace, or any CJK character. Searched
# by the regex engine, not character by character, so text without whitespace (one 5 MB line of base64)
# chunks as fast as prose.
_WORD_START = re.compile(rf"(?<!\S)\S|[{CJK_CLASS}]")

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def window_chars(tokens: int, overlap_pct: int) -> tuple[int, int]:
    """CHARS = tokens x 4 and OVL = floor(CHARS x pct / 100): the window and its overlap in characters."""
    chars = tokens * CHARS_PER_TOKEN
    return chars, chars * overlap_pct // 100


def find_boundary(text: str, pos: int, end: int, overlap: int = 0) -> int:
    """Cut position for the window text[pos:end].

    Just after the last sentence end (.!?\\n) in the window's last 200 chars, else
    just after the last whitespace in its last 50, else `end` itself. The search
    never reaches back to pos + overlap, so every step advances: with real sizes
    (CHARS - OVL >> 200) this changes nothing; with tiny windows it stops the next
    start from creeping one character at a time.
    """
    floor = pos + overlap + 1
    lo = max(floor, end - SENTENCE_LOOKBACK)
    best = max(text.rfind(c, lo, end) for c in SENTENCE_ENDS) if lo < end else -1
    if best >= 0:
        return best + 1
    for i in range(end - 1, max(floor, end - SPACE_LOOKBACK) - 1, -1):
        if text[i].isspace():
            return i + 1
    return end


def window_spans(text: str, chars: int, overlap: int, start: int = 0, stop: int | None = None,
                 units: Sequence[tuple[int, int]] = (),
                 leads: Mapping[int, int] | None = None) -> list[tuple[int, int]]:
    """(start, end) offsets of the sliding-window chunks of text[start:stop].

    Next start = max(pos + 1, boundary - OVL). `units` (sorted, disjoint spans no longer
    than `chars`: code fences, tables, list items, or the parts of a longer one, see
    `structure.parts`) are never cut: a cut that would land inside one moves to its
    start, and when a window OVL before it could not get past the unit's end (it would
    only reach the same unit again and creep through it a character at a time) the next
    window begins there; a cut inside the unit the window begins with moves to its end.
    A next start inside a unit moves back to the unit's start when that keeps the overlap
    near OVL, else on to its end. A window that begins where `leads` has a length (a later
    part of a table or fence, whose chunk repeats its header or opening line) is that much
    shorter.
    """
    stop = len(text) if stop is None else stop
    bounds = [u for u in units if start <= u[0] < stop]
    starts = [u[0] for u in bounds]
    spans: list[tuple[int, int]] = []
    pos = start
    while pos < stop:
        end = min(pos + chars - (leads.get(pos, 0) if leads else 0), stop)
        boundary = stop if end >= stop else find_boundary(text, pos, end, overlap)
        held = -1
        if bounds:
            boundary, held = _outside_unit(boundary, pos, bounds, starts, stop)
        spans.append((pos, boundary))
        if boundary >= stop:
            break
        if held - boundary > chars - overlap:
            pos = boundary
            continue
        pos = next_start(text, max(pos + 1, boundary - overlap), boundary, pos + 1, overlap)
        if bounds:
            pos = _start_outside(pos, spans[-1], overlap, bounds, starts)
    return spans


def _unit_around(at: int, bounds: Sequence[tuple[int, int]], starts: list[int]) -> tuple[int, int] | None:
    """The unit that `at` lies strictly inside, if any."""
    i = bisect.bisect_right(starts, at - 1) - 1
    if i >= 0 and bounds[i][0] < at < bounds[i][1]:
        return bounds[i]
    return None


def _outside_unit(cut: int, pos: int, bounds: Sequence[tuple[int, int]], starts: list[int],
                  stop: int) -> tuple[int, int]:
    """The cut moved out of any unit, and the end of the unit it moved back to the start of (-1 if none)."""
    unit = _unit_around(cut, bounds, starts)
    if unit is None:
        return cut, -1
    if unit[0] > pos:
        return unit[0], unit[1]
    return min(unit[1], stop), -1


def _start_outside(at: int, window: tuple[int, int], overlap: int, bounds: Sequence[tuple[int, int]],
                   starts: list[int]) -> int:
    """A next start moved out of any unit: back to the unit's start when it lies after the window's start
    and the overlap stays within 5/4 of OVL, else to the unit's end (never past the window's end)."""
    unit = _unit_around(at, bounds, starts)
    if unit is None:
        return at
    pos, boundary = window
    if unit[0] > pos and boundary - unit[0] <= overlap + overlap // 4:
        return unit[0]
    return min(unit[1], boundary)


def next_start(text: str, lo: int, hi: int, floor: int = 0, overlap: int = 0) -> int:
    """Where the next window starts, given the plain start `lo` (boundary - OVL) and the boundary `hi`.

    The sentence start nearest to `lo` in the overlap region (from a quarter of OVL
    before `lo` to half of OVL after it, so the overlap stays between 1/2 and 5/4 of
    OVL), else the nearest word start (forward in the region first, then up to 50
    characters back), else `lo` itself (a word longer than all of that). Never before
    `floor` (the current window's start + 1), so every window advances.
    """
    lo_s, hi_s = max(floor, lo - overlap // 4), min(hi, lo + max(1, overlap // 2))
    best = -1
    for m in _SENTENCE_START.finditer(text, max(0, lo_s - 4), hi_s):
        s = m.end()
        if lo_s <= s < hi_s and (best < 0 or abs(s - lo) < abs(best - lo)):
            best = s
    if best >= 0:
        return best
    if (ahead := _WORD_START.search(text, lo, hi)) is not None:
        return ahead.start()
    behind = [m.start() for m in _WORD_START.finditer(text, max(floor, lo - SPACE_LOOKBACK), lo)]
    return behind[-1] if behind else lo


def word_start(text: str, i: int) -> bool:
    """A word begins at `i`: a visible character at the start or after whitespace, or any CJK character."""
    return _WORD_START.match(text, i) is not None


def mid_word(text: str, i: int) -> bool:
    """A cut at `i` splits a word: letters or digits on both sides (between CJK characters is fine)."""
    if i <= 0 or i >= len(text):
        return False
    a, b = text[i - 1], text[i]
    return a.isalnum() and b.isalnum() and not (is_cjk(a) or is_cjk(b))


def code_fences(text: str) -> list[tuple[int, int]]:
    """Character spans of fenced code blocks (``` or ~~~); an unclosed fence runs to the end."""
    spans, offset, open_at, marker = [], 0, -1, ""
    for line in text.splitlines(keepends=True):
        m = FENCE.match(line)
        if m:
            if open_at < 0:
                open_at, marker = offset, m.group(1)
            elif m.group(1)[0] == marker[0] and len(m.group(1)) >= len(marker):
                spans.append((open_at, offset + len(line)))
                open_at = -1
        offset += len(line)
    if open_at >= 0:
        spans.append((open_at, len(text)))
    return spans


@dataclass(frozen=True)
class Section:
    start: int
    end: int
    heading: str          # heading path "Intro > Install"; "" before the first heading


def markdown_sections(text: str) -> list[Section]:
    """Split at ATX headings outside code fences, keeping each section's heading path ("Intro > Install")."""
    fences = code_fences(text)
    starts = [f[0] for f in fences]
    cuts: list[tuple[int, str]] = []
    path: list[tuple[int, str]] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        m = HEADING.match(line.rstrip("\r\n"))
        if m:
            i = bisect.bisect_right(starts, offset) - 1
            if not (i >= 0 and fences[i][0] <= offset < fences[i][1]):
                level = len(m.group(1))
                path = [(lv, t) for lv, t in path if lv < level] + [(level, m.group(2).strip())]
                cuts.append((offset, " > ".join(t for _, t in path)))
        offset += len(line)
    bounds = [(0, ""), *cuts] if not cuts or cuts[0][0] > 0 else cuts
    sections = []
    for k, (begin, heading) in enumerate(bounds):
        end = bounds[k + 1][0] if k + 1 < len(bounds) else len(text)
        if text[begin:end].strip():
            sections.append(Section(begin, end, heading))
    return sections


def heading_at(sections: list[Section], offset: int) -> str:
    """The heading path in force at `offset`."""
    i = bisect.bisect_right([s.start for s in sections], offset) - 1
    return sections[i].heading if i >= 0 else ""


def page_at(pages: Sequence[tuple[int, str, int]], starts: Sequence[int], at: int) -> int:
    """The position in `pages` ((offset, label, index) by offset; `starts` their offsets) of the page offset
    `at` lies on; text before the first page's offset belongs to the first page."""
    return max(0, bisect.bisect_right(starts, at) - 1)


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without leading/trailing whitespace (empty spans collapse to start == end)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def markdown_spans(text: str, chars: int, overlap: int, units: Sequence[tuple[int, int]] = (),
                   leads: Mapping[int, int] | None = None) -> list[tuple[int, int, str]]:
    """Sections first, then the window inside each, never cutting a unit (`window_spans`)."""
    out = []
    starts = [u[0] for u in units]
    for s in markdown_sections(text):
        section = units[bisect.bisect_left(starts, s.start):bisect.bisect_left(starts, s.end)]
        for a, b in window_spans(text, chars, overlap, s.start, s.end, section, leads):
            out.append((a, b, s.heading))
    return out
