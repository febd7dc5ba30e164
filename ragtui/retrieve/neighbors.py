"""Neighbour chunks: the text around each hit, for synthesis.

A hit found in the middle of an argument often needs the chunk before or after it
to make sense. With `retrieve.neighbor_window` = w > 0, each hit brings the
chunks up to w positions before and after it in its file, scored
hit score x 0.85^distance (relative score likewise). A chunk reached from several
hits keeps its best score; a chunk that is itself a hit stays a hit (it is never
demoted to a neighbour). Every source counts against `retrieve.annotate_max`: the
hits stay, and the best-scored neighbours fill the room they leave under it. The
result is re-sorted by score, best first, ties in the order found (hits before
their neighbours). Pure: the caller passes `fetch`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ragtui.model.chunks import Chunk, chunk_id
from ragtui.model.retrieval import Hit

DECAY = 0.85        # score factor per chunk of distance
MAX_WINDOW = 5      # the widest window; config enforces it too

Fetch = Callable[[str, Sequence[str]], Sequence[Chunk]]   # (collection, chunk ids) -> the chunks that exist


def expand(hits: Sequence[Hit], window: int, fetch: Fetch, most: int) -> list[Hit]:
    """`hits` plus each hit's neighbours within `window` chunks, at most `most` in all, best first (see the
    module docstring)."""
    window = min(window, MAX_WINDOW)
    if window <= 0 or not hits:
        return list(hits)
    found: dict[tuple[str, str], Hit] = {(h.chunk.meta.collection, h.chunk.id): h for h in hits}
    neighbours: dict[tuple[str, str], Hit] = {}
    for hit in hits:
        meta = hit.chunk.meta
        wanted = {chunk_id(meta.source, meta.chunk_index + d): abs(d)
                  for d in range(-window, window + 1) if d and meta.chunk_index + d >= 0}
        for chunk in fetch(meta.collection, list(wanted)):
            distance = wanted.get(chunk.id)
            key = (meta.collection, chunk.id)
            if distance is None or key in found:
                continue
            factor = DECAY ** distance
            neighbour = Hit(chunk=chunk, score=hit.score * factor, rel_score=hit.rel_score * factor, legs=(),
                            neighbor_of=hit.chunk.id, distance=distance)
            held = neighbours.get(key)
            if held is None or neighbour.score > held.score:
                neighbours[key] = neighbour
    room = max(0, most - len(found))
    kept = sorted(neighbours.values(), key=lambda h: -h.score)[:room]
    return sorted([*found.values(), *kept], key=lambda h: -h.score)
