"""Sentence-window retrieval ([strategies] sentence_window = w): the question's best sentences, each returned
with the w sentences either side of it, as its chunk.

LlamaIndex's design (SentenceWindowNodeParser indexes sentences with their window in the metadata;
MetadataReplacementPostProcessor puts the window in place of the sentence), over ragtui's stores: the
sentences are a second Whoosh index in the collection (ingest/sentences.py), searched by the keyword leg's
plan and tiers (no synonyms); the window is read from it by the neighbouring sentences' ids, so its width is
chosen at query time. A hit is its sentence's chunk (its id, file and metadata: sources, citations, pages
and annotation treat it as that chunk) with the window's text and span in place of the chunk's, and
page breaks where the window's sentences move on to another page. Each chunk counts once, at its best
sentence's rank; several collections are fused by RRF. A collection without a sentence index, or with one
that cannot be read, is left to the chunk search, with a notice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ragtui.model.chunks import Chunk, LegRank, chunk_id, parse_sentence_id
from ragtui.model.retrieval import Hit, Retrieval, RetrievalMeta
from ragtui.retrieve.fusion import normalised, ranked, rrf_merge

if TYPE_CHECKING:
    from ragtui.config import Settings
    from ragtui.library import Collection
    from ragtui.model.filters import SearchFilter

Key = tuple[str, str]


def sentence_run(settings: Settings, collections: Sequence[Collection], *, mode: str, top_k: int,
                 search_filter: SearchFilter | None = None) -> Callable[[str], Awaitable[Retrieval]] | None:
    """The sentence search of `strategies.search`, in a thread; None when the option is off or a vector-only
    search asks for no keyword index."""
    if not settings.strategies.sentence_window or mode == "vector":
        return None

    async def run(text: str) -> Retrieval:
        return await asyncio.to_thread(sentence_search, settings, text, collections, top_k=top_k,
                                       search_filter=search_filter)

    return run


def no_index_notice(name: str) -> str:
    return (f"Collection {name} has no sentence index, so strategies.sentence_window searched only its chunks; "
            f"the next `ragtui ingest` into it with the option on builds one.")


def sentence_search(settings: Settings, query: str, collections: Sequence[Collection], *, top_k: int,
                    search_filter: SearchFilter | None = None) -> Retrieval:
    """The chunks of the question's best `top_k` sentences per collection, each with its window's text."""
    found: dict[Key, tuple[Chunk, float]] = {}
    rankings: list[list[Key]] = []
    notices: list[str] = []
    for coll in collections:
        if not coll.has_sentences:
            notices.append(no_index_notice(coll.name))
            continue
        try:
            windows = _windows(settings, query, coll, top_k, search_filter)
        except Exception as exc:   # damaged or deleted since: the chunk search still answers for it
            notices.append(f"{coll.unreadable(exc, store='sentences')}; its sentences were not searched.")
            continue
        ranking = []
        for window, score in windows:
            key = (coll.name, window.id)
            found[key] = (window, score)
            ranking.append(key)
        rankings.append(ranking)
    if len(rankings) == 1:
        scores = {key: found[key][1] for key in rankings[0]}
    else:
        scores = rrf_merge([r for r in rankings if r], settings.retrieve.rrf_k)
    rel = normalised(scores)
    hits = [Hit(chunk=found[key][0], score=scores[key], rel_score=rel[key], legs=("keyword",),
                evidence=(LegRank("keyword", rank, found[key][1]),))
            for rank, key in enumerate(ranked(scores), start=1)]
    return Retrieval(query=query, hits=hits, meta=RetrievalMeta(mode="keyword"), keyword_only=True, notices=notices)


def _windows(settings: Settings, query: str, coll: Collection, top_k: int,
             search_filter: SearchFilter | None) -> list[tuple[Chunk, float]]:
    """(window, BM25 score of its sentence) for one collection, best first, one per chunk."""
    from ragtui.retrieve.filtering import FilterScope, resolve
    from ragtui.retrieve.keyword_leg import keyword_search

    scope = resolve(coll.records, search_filter) if search_filter else None
    if scope is not None and scope.empty:
        return []
    index = coll.sentences
    result = keyword_search(index, query, keyword=settings.keyword, top_k=top_k, synonyms=None, max_synonyms=0,
                            within=FilterScope(scope.sources) if scope is not None else None)
    best: dict[str, tuple[Chunk, float]] = {}
    for sentence, score in result.hits:
        owner = chunk_id(sentence.meta.source, sentence.meta.chunk_index)
        if owner not in best and (scope is None or scope.ids is None or owner in scope.ids):
            best[owner] = (sentence, score)
    width = settings.strategies.sentence_window
    wanted = {s.id: _around(s.id, width) for s, _ in best.values()}
    read = {s.id: s for s in index.get(list(dict.fromkeys(i for ids in wanted.values() for i in ids)))}
    return [(window_chunk(s, [read[i] for i in wanted[s.id] if i in read] or [s]), score)
            for s, score in best.values()]


def _around(sid: str, width: int) -> list[str]:
    """The ids of sentence `sid` and the `width` sentences either side of it, in order."""
    parsed = parse_sentence_id(sid)
    if parsed is None:
        return [sid]
    digest, n = parsed
    return [f"{digest}-s{m:06d}" for m in range(max(0, n - width), n + width + 1)]


def window_chunk(hit: Chunk, sentences: Sequence[Chunk]) -> Chunk:
    """The chunk of sentence `hit` with the text, span and pages of these consecutive sentences (its window)."""
    first, last = sentences[0], sentences[-1]
    breaks, at, page = [], 0, first.meta.page
    for s in sentences:
        if s.meta.page != page:
            breaks.append([at, s.meta.page, s.meta.page_index])
            page = s.meta.page
        at += len(s.text)
    text = "".join(s.text for s in sentences).rstrip()
    meta = replace(hit.meta, char_start=first.meta.char_start, char_end=last.meta.char_end, page=first.meta.page,
                   page_index=first.meta.page_index, page_breaks=json.dumps(breaks) if breaks else "",
                   word_count=len(text.split()))
    return Chunk(id=chunk_id(hit.meta.source, hit.meta.chunk_index), text=text, meta=meta)
