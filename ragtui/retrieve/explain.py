"""Why a source was found: the one formatter behind the TUI's details view and `ragtui query`.

Per collection, the keyword leg's decisions (the tier that fired, words kept and
dropped with their IDF, the mean-IDF gate, synonyms used) and the hits per leg;
per source, its rank and score in each leg, the fused score and, when a reranker
scored it, the rerank score; for a follow-up, both the typed question's run and the
rewrite's. Plain text lines: the front ends render them as they are (never as markup).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragtui.model.chunks import LegRank
from ragtui.model.conversation import SessionSource
from ragtui.model.retrieval import CollectionMeta, KeywordMeta, RetrievalMeta, StrategyMeta

if TYPE_CHECKING:
    from ragtui.retrieve.why import WhyNot

TIERS = {1: "1 (every kept word, AND)", 2: "2 (any word or synonym, OR)", "skipped": "skipped", "off": "off"}
LEG_NAMES = {"query": "typed question", "rewrite": "rewritten question", "fused": "fused"}
RUN_NAMES = ("variant ", "fragment ")      # a retrieval strategy's extra searches ("variant 2", "fragment 1")


def with_idf(kw: KeywordMeta, words: Sequence[str]) -> str:
    """`pump (IDF 2.31), seal (IDF 1.02)`; "none" for no words."""
    return ", ".join(f"{w} (IDF {kw.idf[w]:.2f})" if w in kw.idf else w for w in words) or "none"


def collection_lines(name: str, meta: CollectionMeta) -> list[str]:
    """How the collection `name` was searched, in a few lines."""
    kw = meta.keyword
    lines = [f"Collection {name}: keyword tier {TIERS.get(kw.tier, str(kw.tier))}; fusion {meta.fusion}"]
    if kw.tier == "skipped" and kw.reason:
        lines.append(f"  keyword leg skipped: {kw.reason}")
    if kw.words:
        lines.append(f"  words kept: {with_idf(kw, kw.kept)}")
        lines.append(f"  words dropped: {with_idf(kw, kw.dropped)}")
        lines.append(f"  mean IDF {kw.mean_idf:.2f} ({'gate passed' if kw.gate_passed else 'below the gate'})")
        synonyms = "; ".join(f"{w} -> {', '.join(s)}" for w, s in kw.synonyms.items() if s)
        lines.append(f"  synonyms: {synonyms or 'none'}")
        if kw.and_hits is not None:
            lines.append(f"  AND tier found {kw.and_hits}")
    hits = meta.hits
    merged = f", merged {hits.merged}" if hits.merged is not None else ""
    lines.append(f"  hits: vector {hits.vector}, keyword {hits.keyword}, both {hits.both}{merged}")
    return lines


def meta_lines(meta: RetrievalMeta | None, heading: str = "") -> list[str]:
    """Every collection of one retrieval run, under `heading` when given."""
    if meta is None:
        return ["(no retrieval ran)"]
    lines = [heading] if heading else []
    if meta.filter:
        lines.append(f"filter: {' '.join(meta.filter.chips())}")
    for name, collection in meta.collections.items():
        lines += collection_lines(name, collection)
    if meta.strategies is not None:
        lines += strategy_lines(meta.strategies)
    return lines


def strategy_lines(meta: StrategyMeta) -> list[str]:
    """What the retrieval strategies did and cost."""
    lines = [f"Strategies: {', '.join(meta.strategies) or 'none ran'}; {meta.searches} search(es), "
             f"{meta.llm_calls} model call(s) in {meta.llm_s:.1f} s"]
    lines += [f"  also searched: {q}" for q in meta.queries]
    if meta.best_vector is not None:
        lines.append(f"  best cosine of the typed question: {meta.best_vector:.3f}")
    lines += [f"  HyDE passage: {p[:160]}" for p in meta.hyde_passages]
    lines += [f"  fell back: {f}" for f in meta.fallbacks]
    return lines


def evidence_line(evidence: Sequence[LegRank]) -> str:
    """`vector #2 0.812 · keyword #1 7.500 · fused #1 0.091` (one line, as in the query table)."""
    return " · ".join(f"{e.leg} #{e.rank} {e.score:.3f}" for e in evidence) or "-"


def leg_label(leg: str) -> str:
    """"vector leg", "fused", "rewrite · keyword leg" (the rewritten question's run of a follow-up)."""
    prefix, _, base = leg.rpartition(":")
    label = LEG_NAMES.get(base) or (base if base.startswith(RUN_NAMES) else base + " leg")
    return f"{prefix} · {label}" if prefix else label


def source_lines(source: SessionSource) -> list[str]:
    """Why [N] is here: its rank and score in each leg, fused and rerank scores, neighbour origin."""
    lines = [f"Source [{source.number}] {source.chunk.label}"]
    if source.neighbor_of:
        lines.append(f"  neighbour of [{source.neighbor_of}], {source.distance} chunk(s) away: "
                     f"score = that hit's x 0.85^{source.distance}")
    for e in source.evidence:
        lines.append(f"  {leg_label(e.leg)}: rank {e.rank}, score {e.score:.4f}")
    if not any(e.leg.endswith("rerank") for e in source.evidence):
        lines.append("  rerank: none configured")
    lines.append(f"  session score {source.score:.4f}, relative {source.rel_score:.2f}; "
                 f"found by {'+'.join(source.legs) or 'neighbour expansion'}")
    return lines


def details(meta: RetrievalMeta | None, sources: Sequence[SessionSource], *, rewrite: str = "",
            rewrite_meta: RetrievalMeta | None = None) -> list[str]:
    """The details view: each of the given sources, then how the turn's question(s) were searched."""
    lines: list[str] = []
    for source in sources:
        lines += [*source_lines(source), ""]
    lines += meta_lines(meta, "Question as typed:" if rewrite else "")
    if rewrite:
        lines += ["", *meta_lines(rewrite_meta, f"Rewritten question: {rewrite}")]
    return lines


def why_lines(why: WhyNot) -> list[str]:
    """What happened to one expected file (retrieve.why): the outcome, then the ingest, its vectors, and its
    best chunk in each leg."""
    page = f" p.{why.page}" if why.page else ""
    lines = [f"Why {why.collection}/{why.source}{page}: {why.fate}"]
    if why.status != "done":
        state = f"{why.status}: {why.reason}" if why.status else "no record"
        return [*lines, f"  ingest: not indexed ({state})"]
    dropped = ", ".join(f"{reason} {n}" for reason, n in sorted(why.filtered.items()))
    lines.append(f"  ingest: {why.chunks} chunk(s) indexed{' on that page' if why.page else ''}; dropped by the "
                 f"ingest filters (whole file): {dropped or 'none'}")
    for model, missing in why.missing_vectors.items() if why.chunks else ():
        lines.append(f"  vectors ({model}): " + (f"{missing} of {why.chunks} chunk(s) have none; only the keyword "
                                                 "leg can find those" if missing else "every chunk has one"))
    if not why.missing_vectors:
        lines.append("  vectors: the collection has none (its ingest could not embed; the keyword leg alone "
                     "searches it)")
    best = why.best
    if best is None:
        return lines
    head = best.chunk.text.strip().splitlines()[0][:60] if best.chunk.text.strip() else ""
    lines.append(f"  best chunk {best.chunk.id}" + (f" (p.{best.chunk.meta.page})" if best.chunk.meta.page else "")
                 + f": {head!r}")
    kw = why.keyword
    if kw is None or kw.tier == "off":
        lines.append("  keyword leg: off")
    elif kw.tier == "skipped":
        lines.append(f"  keyword leg: skipped ({kw.reason}); words dropped: {with_idf(kw, kw.dropped)}")
    else:
        found = (f"score {best.keyword:.3f}, rank {best.keyword_rank}" if best.keyword is not None
                 else "not found")
        lines.append(f"  keyword leg: tier {TIERS.get(kw.tier, str(kw.tier))}; {found}")
        lines.append(f"    the chunk holds: {', '.join(best.matched) or 'none'}; lacks: "
                     f"{', '.join(best.missing) or 'none'}; words dropped from the query: {with_idf(kw, kw.dropped)}")
    if best.vector is not None:
        lines.append(f"  vector leg: similarity {best.vector:.3f}, rank {best.vector_rank} (each leg keeps its top "
                     f"{why.top_k}; retrieve.min_similarity = {why.floor:g}"
                     + (", below it" if best.vector < why.floor else "") + ")")
    elif best.vectorless:
        lines.append(f"  vector leg: the chunk has no {', '.join(best.vectorless)} vector")
    elif not why.missing_vectors:
        lines.append("  vector leg: none (no vectors in this collection)")
    else:
        lines.append("  vector leg: did not find it")
    return lines
