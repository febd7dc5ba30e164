"""A cited PDF page drawn as an image, with the chunk's text and the annotation's quote boxed in two colours.

Both are found on the page by PyMuPDF's own text search, `Page.search_for(needle, quads=True)`
(https://pymupdf.readthedocs.io/en/latest/page.html#Page.search_for): a phrase that wraps over lines comes back
as one quad per line, so a quote split over two lines is two boxes. A chunk is far too long to search as one
needle, and the page's text differs from the stored text in spacing and hyphenation; so its start and end are
found by searching the first few words of its sentences, from its first sentence on, and the last few words of
its sentences, from its last one back, and every text line of the page between the two (in the reading order of
`Page.get_text("words")`) is the chunk: one box per text block. A quote that is not found whole (it runs over a
page break, or the page spells it differently) is searched in runs of a few words, each hit kept.

Bounded for an untrusted PDF: at most MAX_PAGES pages of a chunk, at most MAX_SEARCHES searches a page, and the
zoom lowered until the image holds at most MAX_PIXELS pixels and MAX_SIDE on either side.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtui import heavy
from ragtui.errors import RagtuiError
from ragtui.model.chunks import Chunk

CHUNK_COLOUR = (30, 100, 230)      # blue: the chunk's text
QUOTE_COLOUR = (230, 30, 30)       # red: the annotation's quote
DEFAULT_ZOOM = 2.0                 # 144 dpi: a page of 595x842 points is 1190x1684 pixels
MAX_ZOOM = 8.0
MAX_PIXELS = 12_000_000            # ~36 MB of RGB for one page image
MAX_SIDE = 8000                    # pixels on either side (a page of 14400 points, PDF's largest, still fits)
MAX_PAGES = 8                      # pages of one chunk drawn (a chunk runs over a break or two)
MAX_SEARCHES = 60                  # text searches on one page
SEARCH_WORDS = 6                   # words in each needle of a piecewise search
HIT_MAX = 32                       # hits one search returns
MAX_NEEDLE = 400                   # characters of a quote searched whole

_SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\n\s*\n")
_WORD = re.compile(r"\S+")


class PageError(RagtuiError):
    """The page cannot be drawn: a PDF that cannot be opened, is encrypted, or no longer has the page."""


@dataclass(frozen=True)
class PagePart:
    """One page a chunk lies on, with the part of the chunk's text that is on it."""

    index: int              # 0-based page number in the PDF
    label: str              # the page's printed label
    text: str
    opens: bool = True      # the chunk starts on this page (else it comes from the previous one)
    closes: bool = True     # the chunk ends on this page (else it goes on to the next one)


@dataclass(frozen=True)
class Box:
    """A rectangle in the image's pixels."""

    x0: int
    y0: int
    x1: int
    y1: int


@dataclass(frozen=True)
class RenderedPage:
    """One page as a PNG, with where its boxes are (for zooming to them) and what was not found on it."""

    part: PagePart
    png: bytes
    width: int
    height: int
    zoom: float
    chunk_boxes: tuple[Box, ...]
    quote_boxes: tuple[Box, ...]
    notes: tuple[str, ...] = ()


def page_parts(chunk: Chunk) -> list[PagePart]:
    """The pages `chunk` lies on, each with its part of the text (`ChunkMeta.breaks`), at most MAX_PAGES; none
    for a chunk without a page."""
    meta = chunk.meta
    if meta.page_index < 0:
        return []
    cuts = [(0, meta.page, meta.page_index), *meta.breaks()]
    ends = [at for at, _, _ in cuts[1:]] + [len(chunk.text)]
    last = len(cuts) - 1
    return [PagePart(index, label, chunk.text[at:end], opens=k == 0, closes=k == last)
            for k, ((at, label, index), end) in enumerate(zip(cuts, ends, strict=True))][:MAX_PAGES]


def render_part(pdf: Path, part: PagePart, quote: str, zoom: float = DEFAULT_ZOOM) -> RenderedPage:
    """Page `part.index` of `pdf` as a PNG with the chunk's text on it (`part.text`) boxed in CHUNK_COLOUR and
    `quote` ("" for none) in QUOTE_COLOUR; PageError when it cannot be drawn."""
    heavy.load("pymupdf")
    import pymupdf

    try:
        doc = pymupdf.open(str(pdf))
    except (RuntimeError, ValueError, OSError) as exc:
        raise PageError(f"cannot open {pdf.name}: {exc}") from None
    with doc:
        if doc.needs_pass:
            raise PageError(f"{pdf.name} is encrypted: a password is required")
        if not 0 <= part.index < doc.page_count:
            count = "1 page" if doc.page_count == 1 else f"{doc.page_count} pages"
            raise PageError(f"{pdf.name} has {count}, not page {part.label} (index {part.index}): it changed "
                            "since it was ingested")
        try:
            return _render(doc[part.index], part, quote, zoom)
        except (RuntimeError, ValueError) as exc:
            raise PageError(f"cannot draw page {part.label} of {pdf.name}: {exc}") from None


def _render(page: Any, part: PagePart, quote: str, zoom: float) -> RenderedPage:
    import pymupdf

    chunk_rects = _chunk_rects(page, part)
    quote_rects = _quote_rects(page, quote, chunk_rects) if quote.strip() else []
    width, height = page.rect.width, page.rect.height
    if not (width > 0 and height > 0):
        raise PageError(f"page {part.label} has no area")
    # less 2 pixels a side for the rounding up of the image's size
    zoom = min(zoom, MAX_ZOOM, (math.sqrt(MAX_PIXELS) - 2) / math.sqrt(width * height), (MAX_SIDE - 2) / width,
               (MAX_SIDE - 2) / height)
    # search and text coordinates are the unrotated page's; the pixmap shows the page as rotated
    to_pixels = page.rotation_matrix * pymupdf.Matrix(zoom, zoom)
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False)
    line = max(2, round(zoom))
    chunk_boxes = tuple(_draw(pix, rect * to_pixels, CHUNK_COLOUR, line, pad=line) for rect in chunk_rects)
    quote_boxes = tuple(_draw(pix, rect * to_pixels, QUOTE_COLOUR, line, pad=line // 2) for rect in quote_rects)
    notes = []
    if not chunk_boxes:
        notes.append(f"the chunk's text was not found on page {part.label}")
    if quote.strip() and not quote_boxes:
        notes.append(f"the quote was not found on page {part.label}")
    return RenderedPage(part, pix.tobytes("png"), pix.width, pix.height, zoom, chunk_boxes, quote_boxes,
                        tuple(notes))


def _draw(pix: Any, rect: Any, colour: tuple[int, int, int], line: int, pad: int) -> Box:
    """A frame `line` pixels wide around `rect` (widened by `pad` so it does not cover the text), painted into
    the pixmap's pixels (exact colours, no anti-aliasing); the frame's outer box."""
    import pymupdf

    x0 = max(0, math.floor(rect.x0) - pad - line)
    y0 = max(0, math.floor(rect.y0) - pad - line)
    x1 = min(pix.width, math.ceil(rect.x1) + pad + line)
    y1 = min(pix.height, math.ceil(rect.y1) + pad + line)
    for edge in ((x0, y0, x1, y0 + line), (x0, y1 - line, x1, y1), (x0, y0, x0 + line, y1),
                 (x1 - line, y0, x1, y1)):
        pix.set_rect(pymupdf.IRect(*edge), colour)
    return Box(x0, y0, x1, y1)


class _Searcher:
    """`Page.search_for` at most MAX_SEARCHES times on one page."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.left = MAX_SEARCHES

    def __call__(self, needle: str) -> list[Any]:
        if self.left <= 0 or not needle.strip():
            return []
        self.left -= 1
        return list(self.page.search_for(needle, quads=True))[:HIT_MAX]


def _chunk_rects(page: Any, part: PagePart) -> list[Any]:
    """One rectangle per text block of the page holding the chunk's part: the words from where its start is
    found to where its end is found (module docstring). A part that goes on to the next page ends with the
    page's last word; one that comes from the previous page starts with its first. Of the places a start and an
    end are found (text can recur on a page), the pair as many words apart as the part has is taken."""
    import pymupdf

    words = page.get_text("words")
    sentences = [s for s in _SENTENCE.split(part.text) if _words(s)]
    if not words or not sentences:
        return []
    search = _Searcher(page)
    half = MAX_SEARCHES // 2
    starts, ends = [0], [len(words) - 1]
    if part.opens:
        heads = _first_found(words, search, (" ".join(_words(s)[:SEARCH_WORDS]) for s in sentences[:half]))
        starts = sorted(i for i in heads if i - 1 not in heads)
    if part.closes:
        tails = _first_found(words, search,
                             (" ".join(_words(s)[-SEARCH_WORDS:]) for s in reversed(sentences[-half:])))
        ends = sorted(i for i in tails if i + 1 not in tails)
    size = len(_words(part.text))
    pairs = [(abs(end - start + 1 - size), start, end) for start in starts for end in ends if start <= end]
    if not pairs:
        return []
    _, first, last = min(pairs)
    blocks: dict[int, Any] = {}
    for x0, y0, x1, y1, _, block, _, _ in words[first:last + 1]:
        rect = pymupdf.Rect(x0, y0, x1, y1)
        blocks[block] = blocks[block] | rect if block in blocks else rect
    line = max(y1 - y0 for x0, y0, x1, y1, *_ in words[first:last + 1])
    return _stacked(list(blocks.values()), line)


def _stacked(rects: list[Any], line: float) -> list[Any]:
    """Blocks one below the other, less than a text `line` apart and side by side, joined into one (the rows
    of a table, the paragraphs of a column)."""
    joined: list[Any] = []
    for rect in sorted(rects, key=lambda r: (r.y0, r.x0)):
        near = next((k for k, j in enumerate(joined)
                     if rect.y0 - j.y1 < line and rect.x0 < j.x1 and j.x0 < rect.x1), None)
        if near is None:
            joined.append(rect)
        else:
            joined[near] = joined[near] | rect
    return joined


def _words(text: str) -> list[str]:
    """The words of a piece of the chunk's text, less the " | " the ingest puts between a table's cells (the page
    has none there)."""
    return [w for w in _WORD.findall(text) if w != "|"]


def _first_found(words: Sequence[Any], search: _Searcher, needles: Iterable[str]) -> set[int]:
    """The indexes of the page's words in the hits of the first of `needles` that is found (none: empty)."""
    for needle in needles:
        if found := _words_at(words, search(needle)):
            return found
    return set()


def _words_at(words: Sequence[Any], quads: list[Any]) -> set[int]:
    """The indexes of the page's words whose centre lies in one of `quads`."""
    rects = [q.rect for q in quads]
    return {i for i, (x0, y0, x1, y1, *_) in enumerate(words)
            if any(r.x0 <= (x0 + x1) / 2 <= r.x1 and r.y0 <= (y0 + y1) / 2 <= r.y1 for r in rects)}


def _quote_rects(page: Any, quote: str, chunk_rects: list[Any]) -> list[Any]:
    """One rectangle per line of the quote on the page: its hits inside the chunk's blocks when some are
    (a phrase can recur elsewhere on the page), else all of them."""
    search = _Searcher(page)
    quads = search(" ".join(quote.split())) if len(quote) <= MAX_NEEDLE else []
    if not quads:
        words = _words(quote)
        for at in range(0, len(words), SEARCH_WORDS):
            quads += search(" ".join(words[at:at + SEARCH_WORDS]))
    rects = [q.rect for q in quads]
    inside = [r for r in rects if any(c.contains((r.tl + r.br) / 2) for c in chunk_rects)]
    return _lines(inside or rects)


def _lines(rects: list[Any]) -> list[Any]:
    """Rectangles on the same line that touch or overlap joined into one (the hits of a piecewise search)."""
    joined: list[Any] = []
    for rect in sorted(rects, key=lambda r: (round(r.y0), r.x0)):
        last = joined[-1] if joined else None
        same_line = last is not None and min(last.y1, rect.y1) - max(last.y0, rect.y0) > 0.5 * rect.height
        if last is not None and same_line and rect.x0 <= last.x1 + rect.height:
            joined[-1] = last | rect
        else:
            joined.append(rect)
    return joined
