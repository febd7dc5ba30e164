"""The quality floors: a chunk must share enough of the question's content words, and its cosine similarity,
where the vector leg gave one, must reach an absolute floor (retrieve.min_token_overlap,
retrieve.min_vector_score; both 0 = off).

Unlike retrieve.min_similarity, which judges only chunks the vector leg alone found, both floors apply to
every chunk, keyword-found ones too; unlike retrieve.min_score, the score floor is absolute, not relative
to the list.
"""

from __future__ import annotations

from collections.abc import Set

from ragtui.text import content_words


def token_overlap(wanted: Set[str], text: str) -> float:
    """The share of `wanted` (the question's content words) that `text` contains; 1 when `wanted` is empty."""
    if not wanted:
        return 1.0
    return len(wanted & content_words([text])) / len(wanted)


def above_floors(wanted: Set[str], text: str, vector: float | None, *, min_overlap: float,
                 min_vector: float) -> bool:
    """The floors' rule for one chunk: its token overlap reaches `min_overlap`, and its cosine `vector`
    (None when the vector leg did not score it: no floor to meet) reaches `min_vector`."""
    if min_vector > 0 and vector is not None and vector < min_vector:
        return False
    return min_overlap <= 0 or token_overlap(wanted, text) >= min_overlap
