"""A question of several parts split into its fragments, each searched on its own ([strategies] fragments).

"What causes flutter? How is it damped; at what speed" asks three things; one embedding of the whole
blurs them. The split is on ".", "?" and ";" followed by a space or the end (so "2.5" and "e.g." inside
a word run stay whole); a fragment without a content word ("Why?") is dropped, and a question of one
fragment is not split.
"""

from __future__ import annotations

import re

from ragtui.text import content_words

_SPLIT = re.compile(r"(?<=[.?;])\s+")
MAX_FRAGMENTS = 6


def query_fragments(query: str) -> list[str]:
    """The question's fragments with a content word, in order, at most MAX_FRAGMENTS; [] for a question of
    one fragment."""
    parts = [" ".join(p.split()).rstrip(".;").strip() for p in _SPLIT.split(query)]
    kept = list(dict.fromkeys(p for p in parts if p and content_words([p])))
    return kept[:MAX_FRAGMENTS] if len(kept) > 1 else []
