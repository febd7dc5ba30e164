"""The most relevant window of a chunk for a query: one rule for three readers.

A chunk can be longer than what a reader takes: the annotator reads WINDOW_CHARS
(1,200), packing may have room only for part of a source, and the source viewer
shows which part that was. When the first characters were sent, a chunk whose
answer sat at char 7,631 was annotated with an unrelated quote from its opening.
Here the window is placed around the sentences that share the most query words,
weighting words rare within the chunk higher, so all three readers see the same
passage. Pure and fast (no model call): it runs per source per question.
"""

from __future__ import annotations

import math
import re

from ragtui.words import FUNCTION_WORDS

WINDOW_CHARS = 1200     # what the annotator reads (the prompt's CONTENT) and the most a packed window takes
WORD = re.compile(r"[a-z0-9]+")
SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+(?=\s|$)|\n|$)")
SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """A light suffix strip, enough to match "valves" with "valve" inside one chunk."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_terms(text: str) -> set[str]:
    """Stemmed lowercase words of `text` other than function words."""
    return {stem(w) for w in WORD.findall(text.lower()) if w not in FUNCTION_WORDS}


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each non-blank sentence or line, in order, leading whitespace left out."""
    return [(m.end() - len(m.group().lstrip()), m.end()) for m in SENTENCE.finditer(text) if m.group().strip()]


def best_window(text: str, query: str, chars: int) -> tuple[int, int]:
    """(start, end) of the `chars`-long part of `text` most about `query`.

    The whole text when it fits; its opening when no sentence shares a content
    word with the query. Otherwise the run of whole sentences that fits `chars`
    and covers the most query weight (a query word weighs ln(1 + S / s), S
    sentences in the chunk, s of them holding the word), then centred on its
    first to last matching sentence and widened to `chars` on both sides.
    """
    if len(text) <= chars:
        return 0, len(text)
    spans = sentence_spans(text)
    wanted = content_terms(query)
    found = [content_terms(text[a:b]) & wanted for a, b in spans]
    held = {t: sum(t in f for f in found) for t in wanted}
    weight = {t: math.log(1 + len(spans) / n) for t, n in held.items() if n}
    if not weight:
        return 0, _snap_end(text, 0, chars)
    best, best_key = (0, 0), (-1.0, 0)
    for i in range(len(spans)):
        j = i
        while j < len(spans) and spans[j][1] - spans[i][0] <= chars:
            j += 1
        covered = set().union(*found[i:max(j, i + 1)])
        key = (sum(weight.get(t, 0.0) for t in covered), sum(bool(f) for f in found[i:max(j, i + 1)]))
        if key > best_key:
            best, best_key = (i, max(j, i + 1)), key
    matched = [k for k in range(*best) if found[k]]
    first, last = spans[matched[0]][0], spans[matched[-1]][1]
    if last - first >= chars:                  # one long sentence: its opening
        return first, _snap_end(text, first, chars)
    start = max(0, min(first - (chars - (last - first)) // 2, len(text) - chars))
    starts = [a for a, _ in spans if start <= a <= first]
    start = starts[0] if starts else start
    return start, max(last, _snap_end(text, start, chars))


def _snap_end(text: str, start: int, chars: int) -> int:
    """start + chars, moved back to the end of the last whole sentence or word inside it when there is one."""
    end = min(len(text), start + chars)
    if end == len(text):
        return end
    cut = max(text.rfind(c, start, end) for c in ".!?\n")
    if cut > start + chars // 2:
        return cut + 1
    space = text.rfind(" ", start, end)
    return space if space > start + chars // 2 else end
