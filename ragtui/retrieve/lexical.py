"""The keyword leg's query planning as pure functions.

Given the query words and their document frequencies, decide whether the keyword
leg runs at all (information-content gate), which words it keeps (long-query
filter), and how many WordNet synonyms each kept word may bring (budget by IDF
third). The Whoosh side lives in `keyword_leg.py`; nothing here touches an index.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ragtui.text import search_words
from ragtui.words import QUESTION_WORDS


def query_words(query: str) -> list[str]:
    """Word runs in any script, folded and lowercased, CJK runs as bigrams, first occurrence kept
    (the index's analyzer cuts chunk text the same way).

    Punctuation and query-language operators disappear, so the text can never
    inject Whoosh syntax.
    """
    return search_words(query)


def smoothed_idf(n_docs: int, df: int) -> float:
    """ln((N + 1) / (df + 1)): Sparck Jones's inverse document frequency ln(N / df) ("A statistical
    interpretation of term specificity", 1972) with one added to N and df, so a word absent from the
    collection (df = 0) gets the finite maximum ln(N + 1) and a word in every chunk gets 0 (scikit-learn's
    `TfidfTransformer(smooth_idf=True)` uses the same smoothing, plus 1). It measures how informative a query
    word is for the gate, the long-query filter and the synonym budgets; the ranking uses `bm25_idf`."""
    return math.log((n_docs + 1) / (df + 1))


def mean_idf(idfs: Sequence[float]) -> float:
    """Mean information content of the query words; 0 for no words."""
    return sum(idfs) / len(idfs) if idfs else 0.0


def passes_ic_gate(idfs: Sequence[float], min_query_ic: float) -> bool:
    """False when mean IDF < keyword.min_query_ic: a query of common words skips the keyword leg."""
    return bool(idfs) and mean_idf(idfs) >= min_query_ic


def rank_by_idf(idfs: Mapping[str, float]) -> list[str]:
    """Words by IDF, highest first; ties keep query order (sorted is stable)."""
    return sorted(idfs, key=lambda w: -idfs[w])


def split_long_query(ranked: Sequence[str], long_query_threshold: int) -> tuple[list[str], list[str]]:
    """(kept, dropped): over the threshold only the top ceil(2n/3) words by IDF stay.

    `ranked` must already be sorted by IDF, highest first. At or under the
    threshold every word is kept.
    """
    if len(ranked) <= long_query_threshold:
        return list(ranked), []
    keep = math.ceil(2 * len(ranked) / 3)
    return list(ranked[:keep]), list(ranked[keep:])


def idf_third(rank: int, n_kept: int) -> int:
    """0, 1 or 2: which third of the kept words (by IDF rank, 0 = best) a word falls in."""
    return min(2, (3 * rank) // max(n_kept, 1))


def synonym_budget(rank: int, n_kept: int, max_per_word: int, df: int) -> int:
    """Synonyms allowed for the kept word at IDF `rank`.

    Top third: max_per_word; middle third: ceil(max/2) (at least 1); bottom
    third: 1. A word absent from the collection (df = 0) gets the full budget
    whatever its rank, since only its synonyms can match. max_per_word = 0 turns
    expansion off.
    """
    if max_per_word <= 0:
        return 0
    if df == 0:
        return max_per_word
    third = idf_third(rank, n_kept)
    if third == 0:
        return max_per_word
    if third == 1:
        return max(1, math.ceil(max_per_word / 2))
    return 1


def needs_or_tier(and_hits: int) -> bool:
    """Tier 2 (OR of words and synonyms) runs when the AND tier found fewer than 3 chunks."""
    return and_hits < 3


@dataclass
class KeywordPlan:
    """What the keyword leg will do for one query on one collection."""

    words: list[str]
    idf: dict[str, float]
    kept: list[str]
    dropped: list[str]
    gate_passed: bool
    budgets: dict[str, int] = field(default_factory=dict)

    @property
    def mean_idf(self) -> float:
        return mean_idf(list(self.idf.values()))


def plan_keyword_query(
    words: Sequence[str],
    df: Mapping[str, int],
    n_docs: int,
    *,
    min_query_ic: float,
    long_query_threshold: int,
    max_synonyms: int,
) -> KeywordPlan:
    """IDF per word, the gate, the long-query filter and the synonym budgets, in that order.

    The gate weighs every word typed. Then question words
    ("how", "do", "what", "can", "is": `words.QUESTION_WORDS`) are dropped:
    they are not what the query is about, so they are neither required by the
    AND tier nor expanded by WordNet ("do" -> "bash", "brawl"). A query of
    nothing else skips the leg.
    """
    idfs = {w: smoothed_idf(n_docs, df.get(w, 0)) for w in words}
    asked = [w for w in words if w in QUESTION_WORDS]
    content = {w: v for w, v in idfs.items() if w not in QUESTION_WORDS}
    gate = bool(content) and passes_ic_gate(list(idfs.values()), min_query_ic)
    if not gate:
        return KeywordPlan(list(words), idfs, [], list(words), False)
    kept, dropped = split_long_query(rank_by_idf(content), long_query_threshold)
    dropped += asked
    budgets = {w: synonym_budget(i, len(kept), max_synonyms, df.get(w, 0)) for i, w in enumerate(kept)}
    return KeywordPlan(list(words), idfs, kept, dropped, True, budgets)
