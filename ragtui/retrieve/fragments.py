"""A question of several parts split into its fragments, each searched on its own ([strategies] fragments).

"What causes flutter? How is it damped; at what speed" asks three things; one embedding of the whole
blurs them. The split is at ".", "?" and ";" followed by a space or the end, outside brackets and
quotations (so "(the ?slip? effect)" stays whole), and not after an abbreviation ("St. John's", "Ted Ginn
Jr. returned"), initials ("U.S. Patent") or a single letter ("J. Smith"); "2.5" has no space after its
point. A fragment without a content word ("Why?") is dropped, and a question of one fragment is not split.
"""

from __future__ import annotations

import re

from ragtui.text import content_words

MAX_FRAGMENTS = 6
ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "vs", "etc", "e.g", "i.e", "cf",
                           "no", "fig", "eq", "approx", "inc", "ltd", "co", "mt", "ft", "vol", "al", "rev", "gen",
                           "col", "lt", "capt", "gov", "sen", "pres"})
_LAST_WORD = re.compile(r"([\w.]+)$")


def query_fragments(query: str) -> list[str]:
    """The question's fragments with a content word, in order, at most MAX_FRAGMENTS; [] for a question of
    one fragment."""
    parts, start, depth, quoted = [], 0, 0, False
    for i, ch in enumerate(query):
        depth += (ch in "([{“") - (ch in ")]}”" and depth > 0)
        quoted ^= ch == '"'
        if ch in ".?;" and depth == 0 and not quoted and (i + 1 == len(query) or query[i + 1].isspace()) \
                and not (ch == "." and _abbreviation(query[start:i])):
            parts.append(query[start:i + 1])
            start = i + 1
    parts.append(query[start:])
    cleaned = (" ".join(p.split()).rstrip(".;").strip() for p in parts)
    kept = list(dict.fromkeys(p for p in cleaned if p and content_words([p])))
    return kept[:MAX_FRAGMENTS] if len(kept) > 1 else []


def _abbreviation(before: str) -> bool:
    """The text before a full stop ends in an abbreviation, a single letter or initials ("U.S")."""
    match = _LAST_WORD.search(before)
    word = match.group(1).lower() if match else ""
    return len(word) == 1 or "." in word or word in ABBREVIATIONS
