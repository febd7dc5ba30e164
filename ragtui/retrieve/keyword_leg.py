"""The keyword leg on one collection's Whoosh index: plan the query (`lexical.py`), then an AND tier and an OR tier.

Both tiers are scored by BM25 from the index's cached posting arrays
(`stores/postings.py`), on one generation of the index.

Words are analysed exactly as the index analysed the chunks (lowercase, stop
words, stemming), so document frequencies and matches refer to the same terms.
A word the analyser drops entirely (a stop word) counts as present in every
chunk: IDF about 0, so the gate and the long-query filter treat it as noise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragtui.model.chunks import Chunk
from ragtui.model.retrieval import KeywordMeta, KeywordTier
from ragtui.retrieve.lexical import KeywordPlan, needs_or_tier, plan_keyword_query, query_words

if TYPE_CHECKING:
    from ragtui.config_sections import KeywordSettings
    from ragtui.retrieve.filtering import FilterScope
    from ragtui.retrieve.senses import Synonyms
    from ragtui.stores.keyword import KeywordIndex, KeywordView
    from ragtui.stores.postings import Clause

# a synonym weighs a quarter of a query word in the OR tier (docs/benchmarks.md, "Why the defaults changed")
SYNONYM_BOOST = 0.25


@dataclass(frozen=True)
class KeywordResult:
    hits: list[tuple[Chunk, float]]   # BM25 score (stores.postings), best first
    meta: KeywordMeta


def _clause(index: KeywordIndex, text: str, boost: float = 1.0) -> Clause | None:
    """A term clause for a one-term text, a phrase clause for a multi-word synonym, None when nothing survives
    analysis."""
    from ragtui.stores.postings import Clause

    terms = tuple(index.analyze(text))
    return Clause(terms, boost) if terms else None


def plan_for(index: KeywordIndex, view: KeywordView, words: list[str], keyword: KeywordSettings,
             max_synonyms: int) -> tuple[KeywordPlan, dict[str, str]]:
    """The keyword plan (`lexical.plan_keyword_query`) for these words on this generation of the index, and
    each searchable word's analysed term."""
    term_of = {w: terms[0] for w in words if (terms := index.analyze(w))}
    n_docs, df_terms = view.frequencies(list(dict.fromkeys(term_of.values())))
    df = {w: df_terms[term_of[w]] if w in term_of else n_docs for w in words}
    plan = plan_keyword_query(words, df, n_docs, min_query_ic=keyword.min_query_ic,
                              long_query_threshold=keyword.long_query_threshold, max_synonyms=max_synonyms)
    return plan, term_of


def keyword_search(index: KeywordIndex, query: str, *, keyword: KeywordSettings, top_k: int,
                   synonyms: Synonyms | None, max_synonyms: int, within: FilterScope | None = None) -> KeywordResult:
    """Gate, AND tier, then the OR tier with synonyms when AND found fewer than 3 chunks.

    `within` keeps both tiers to a filter's files or chunks (retrieve/filtering.py); the plan's IDF stays
    the whole collection's.

    Hits are (chunk, score) best first; in the OR tier the AND tier's full
    matches stay on top (`_and_first`). `synonyms` gives each expandable word's
    synonyms in one call (one batched sense choice per query, senses.py).
    """
    started = time.perf_counter()
    words = query_words(query)
    with index.scoring() as view:     # the plan and both tiers on one generation of the index
        plan, term_of = plan_for(index, view, words, keyword, max_synonyms if synonyms else 0)
        timings = {"plan": _ms(started)}
        searchable = [w for w in plan.kept if w in term_of]
        if not plan.gate_passed or not searchable:
            # the text names the key's old spelling (still read): --json and history keep their words
            reason = "low information (mean IDF below keyword.min_query_ic)" if not plan.gate_passed \
                else "no searchable words"
            return KeywordResult([], _meta(plan, "skipped", timings, reason=reason))
        words_only = [c for w in searchable if (c := _clause(index, w)) is not None]
        t = time.perf_counter()
        allowed = view.within(sources=within.sources, ids=within.ids) if within is not None else None
        hits = view.search(words_only, top_k, require_all=True, allowed=allowed)
        timings["and"] = _ms(t)
        and_hits = len(hits)
        if not needs_or_tier(and_hits):
            return KeywordResult(hits, _meta(plan, 1, timings, hits=len(hits), and_hits=and_hits))
        t = time.perf_counter()
        clauses = list(words_only)
        added: dict[str, tuple[str, ...]] = {}
        if synonyms is not None:
            expandable = [w for w in searchable if plan.budgets.get(w, 0) > 0]
            for w, found in synonyms.for_words(expandable).items():
                chosen = [s for s in found if index.analyze(s)][:plan.budgets[w]]
                if chosen:
                    added[w] = tuple(chosen)
                    clauses.extend(c for s in chosen if (c := _clause(index, s, SYNONYM_BOOST)) is not None)
            timings["synonyms"] = _ms(t)
            t = time.perf_counter()
        hits = _and_first(hits, view.search(clauses, top_k, require_all=False, allowed=allowed), top_k)
        timings["or"] = _ms(t)
    return KeywordResult(hits, _meta(plan, 2, timings, hits=len(hits), and_hits=and_hits, synonyms=added))


def _meta(plan: KeywordPlan, tier: KeywordTier, timings: dict[str, float], *, hits: int = 0,
          and_hits: int | None = None, synonyms: dict[str, tuple[str, ...]] | None = None,
          reason: str = "") -> KeywordMeta:
    """This leg's retrieval_meta: the plan (IDF rounded for display) and what the search did."""
    return KeywordMeta(tier=tier, words=tuple(plan.words), idf={w: round(v, 4) for w, v in plan.idf.items()},
                       mean_idf=round(plan.mean_idf, 4), gate_passed=plan.gate_passed, kept=tuple(plan.kept),
                       dropped=tuple(plan.dropped), synonym_budget=dict(plan.budgets), synonyms=synonyms or {},
                       hits=hits, timings_ms=timings, and_hits=and_hits, reason=reason)


def _and_first(and_hits: list[tuple[Chunk, float]], or_hits: list[tuple[Chunk, float]],
               top_k: int) -> list[tuple[Chunk, float]]:
    """The OR tier's hits with the AND tier's few full matches kept ahead of every partial match.

    BM25 alone could rank a long chunk holding every word below short chunks
    holding one word many times, or cut it at top_k; the full matches are lifted
    by the best OR score so the scores stay in rank order.
    """
    if not and_hits:
        return or_hits
    lift = or_hits[0][1] if or_hits else 0.0
    full = {c.id for c, _ in and_hits}
    return ([(c, s + lift) for c, s in and_hits] + [(c, s) for c, s in or_hits if c.id not in full])[:top_k]


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)
