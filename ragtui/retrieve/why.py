"""Why a file the user expected is not among a query's sources: what happened to it in each step.

    why = await why_not(settings, "pump seals", collections, "manuals/pump.pdf", page="12", lexicon=lexicon)

The query is run again as `pipeline.retrieve` runs it (both legs, fusion, the
retrieve.min_similarity floor, then the postprocessors one at a time), and the
first step that took the file's last chunk out is named. A second, deep run of
the file's collection (each leg ranking every chunk, up to `DEEP_TOP_K`) gives
its best chunk's vector similarity and rank, keyword score and rank, and which
of the query's words it holds. From the records: whether the file was indexed
at all, how many of its chunks the ingest filters dropped (entropy, tables of
contents), and how many have no vector. `explain.why_lines` writes it out.
A reranker is not replayed (its order would need another call to its server).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ragtui.config import Settings
from ragtui.errors import RagtuiError
from ragtui.model.chunks import Chunk
from ragtui.model.retrieval import KeywordMeta, Mode

if TYPE_CHECKING:
    from ragtui.library import Collection
    from ragtui.retrieve.wordnet import Lexicon

DEEP_TOP_K = 10_000     # each leg's depth in the deep run: ranks past it are reported as "below"


@dataclass(frozen=True)
class ChunkLegs:
    """Where the legs put one chunk in the deep run (None: that leg did not find it)."""

    chunk: Chunk
    vector: float | None = None
    vector_rank: int | None = None
    keyword: float | None = None
    keyword_rank: int | None = None
    matched: tuple[str, ...] = ()       # the kept query words its text holds
    missing: tuple[str, ...] = ()       # the kept query words it lacks
    vectorless: tuple[str, ...] = ()    # the collection's models with no vector for it


@dataclass(frozen=True)
class WhyNot:
    """One file's fate in one collection for one query."""

    collection: str
    source: str
    page: str = ""                          # the page asked about; "" for the whole file
    status: str = ""                        # the file's ingest record: "done", "skipped", ...
    reason: str = ""                        # why it was skipped, when it was
    chunks: int = 0                         # its indexed chunks (on that page)
    filtered: dict[str, int] = field(default_factory=dict)     # chunks the ingest filters dropped, per reason
    missing_vectors: dict[str, int] = field(default_factory=dict)   # model -> its chunks without a vector
    keyword: KeywordMeta | None = None      # the keyword leg's plan and tier for the query
    best: ChunkLegs | None = None           # its best chunk in the deep run
    top_k: int = 0
    floor: float = 0.0
    fate: str = ""                          # the step that took it out, or where it was returned
    returned_at: int | None = None          # its best rank among the returned sources


async def why_not(settings: Settings, query: str, collections: Sequence[Collection], path: str, *,
                  lexicon: Lexicon, mode: Mode = "hybrid", synonyms: bool | None = None) -> list[WhyNot]:
    """The file `path` (as `query` lists sources, or any path ending with that; `PATH:PAGE` for one page) in
    each of these collections that has it; a RagtuiError when none does."""
    found = _resolve(collections, path)
    page = ""
    if not found and ":" in path:
        path, page = path.rsplit(":", 1)
        found = _resolve(collections, path)
    if not found:
        names = ", ".join(c.name for c in collections)
        raise RagtuiError(f"no file {path!r} in {names}: it was never ingested there, or discovery left it out "
                          "(hidden, ignored or unreadable: see the ingest report)")
    out: list[WhyNot] = []
    for collection, source in found:
        out.append(await _diagnose(settings, query, collections, collection, source, page, lexicon=lexicon,
                                   mode=mode, synonyms=synonyms))
    return out


def _resolve(collections: Sequence[Collection], path: str) -> list[tuple[Collection, str]]:
    """(collection, source) of every recorded file that is `path`, or whose path ends with it, or that `path`
    (an absolute or longer path the user typed) ends with."""
    wanted = path.strip().replace("\\", "/")
    if not wanted:
        return []
    out: list[tuple[Collection, str]] = []
    for collection in collections:
        sources = [f.source for f in collection.records.files()]
        exact = [s for s in sources if s == wanted]
        near = exact or [s for s in sources if wanted.endswith("/" + s) or s.endswith("/" + wanted)]
        out.extend((collection, s) for s in near[:1])
    return out


async def _diagnose(settings: Settings, query: str, collections: Sequence[Collection], collection: Collection,
                    source: str, page: str, *, lexicon: Lexicon, mode: Mode, synonyms: bool | None) -> WhyNot:
    records = collection.records
    record = records.file(source)
    base = WhyNot(collection.name, source, page, top_k=settings.retrieve.top_k,
                  floor=settings.retrieve.min_similarity)
    if record is None or record.status != "done":
        return replace(base, status=record.status if record else "", reason=record.reason if record else "",
                        fate="not indexed")
    chunks = [c for c in records.chunks_of([source]) if not page or c.meta.page == page]
    filtered = {str(k): int(v) for k, v in json.loads(record.filtered or "{}").items()}
    missing = {}
    for model in collection.models:
        embedded = records.embedded_ids(model)
        missing[model] = sum(c.id not in embedded for c in chunks)
    base = replace(base, status=record.status, chunks=len(chunks), filtered=filtered, missing_vectors=missing)
    if not chunks:
        pages = sorted({c.meta.page for c in records.chunks_of([source])})
        fate = (f"no chunk starts on page {page} (its chunks start on pages {', '.join(pages)})" if page and pages
                else "no chunk of it was indexed")
        return replace(base, fate=fate)
    ids = {c.id for c in chunks}
    fate, returned_at = await _fate(settings, query, collections, collection.name, ids, lexicon=lexicon, mode=mode,
                                    synonyms=synonyms)
    keyword, best = await _deep(settings, query, collection, chunks, lexicon=lexicon, mode=mode, synonyms=synonyms)
    return replace(base, keyword=keyword, best=best, fate=fate, returned_at=returned_at)


async def _fate(settings: Settings, query: str, collections: Sequence[Collection], name: str, ids: set[str], *,
                lexicon: Lexicon, mode: Mode, synonyms: bool | None) -> tuple[str, int | None]:
    """The step of `pipeline.retrieve` after which none of the chunks `ids` of collection `name` is left, or
    where the first of them was returned."""
    from ragtui.model.retrieval import node_id
    from ragtui.retrieve.hybrid_retriever import HybridRetriever
    from ragtui.retrieve.pipeline import below_the_floors, file_chunks, quality_floors, similar_enough
    from ragtui.retrieve.postprocess import postprocessors

    wanted = {node_id(name, i) for i in ids}
    retriever = HybridRetriever(settings, collections, lexicon=lexicon, mode=mode, synonyms=synonyms)
    nodes = await retriever.aretrieve(query)
    if not any(n.node.node_id in wanted for n in nodes):
        return (f"no leg found it among its top {settings.retrieve.top_k} (retrieve.top_k)", None)
    floor = settings.retrieve.min_similarity
    nodes = [n for n in nodes if similar_enough(retriever.evidence[n.node.node_id], floor)]
    if not any(n.node.node_id in wanted for n in nodes):
        return (f"only the vector leg found it, below retrieve.min_similarity = {floor:g}", None)
    nodes, _ = quality_floors(settings, query, nodes, retriever)
    if not any(n.node.node_id in wanted for n in nodes):
        return (below_the_floors(settings), None)
    counts = file_chunks(collections, nodes, []) if settings.retrieve.per_file_cap == "passages" else None
    steps = {"PerFileCap": "the per-file cap (retrieve.per_file_cap, retrieve.max_chunks_per_file) kept other "
                           "chunks of the same file, which ranked higher",
             "LeadingTextDedupe": "another chunk with the same first 200 characters ranked higher",
             "MinScoreCut": f"its relative score is below retrieve.min_score = {settings.retrieve.min_score:g}",
             "PreAnnotateKeep": "cut by retrieve.pre_annotate_keep / retrieve.annotate_max"}
    for step in postprocessors(settings.retrieve, file_chunks=counts):
        nodes = step.postprocess_nodes(nodes, query_str=query)
        if not any(n.node.node_id in wanted for n in nodes):
            return (steps.get(type(step).__name__, type(step).__name__), None)
    rank = next(i for i, n in enumerate(nodes, start=1) if n.node.node_id in wanted)
    return (f"returned as source #{rank}" + (" (before any reranker)" if settings.rerank.enabled else ""), rank)


async def _deep(settings: Settings, query: str, collection: Collection, chunks: Sequence[Chunk], *,
                lexicon: Lexicon, mode: Mode, synonyms: bool | None) -> tuple[KeywordMeta | None, ChunkLegs]:
    """The collection searched with each leg ranking up to DEEP_TOP_K chunks: the keyword plan, and the
    file's best chunk (best fused position; else the first) with its legs."""
    from ragtui.retrieve.hybrid_retriever import HybridRetriever
    from ragtui.retrieve.pipeline import leg_ranks

    depth = max(1, min(DEEP_TOP_K, collection.keyword.doc_count()))
    retriever = HybridRetriever(settings, [collection], lexicon=lexicon, mode=mode, synonyms=synonyms,
                                top_k=depth)
    nodes = await retriever.aretrieve(query)
    meta = retriever.meta.collections.get(collection.name)
    keyword = meta.keyword if meta is not None else None
    ranks = leg_ranks(retriever.evidence.values())
    by_id = {c.id: c for c in chunks}
    order = [retriever.evidence[n.node.node_id].chunk.id for n in nodes]
    best_id = next((i for i in order if i in by_id), chunks[0].id)
    chunk = by_id[best_id]
    vector = ranks.get((collection.name, best_id, "vector"))
    kw = ranks.get((collection.name, best_id, "keyword"))
    matched, missing = _words_held(collection, chunk, keyword)
    vectorless = tuple(m for m in collection.models if best_id not in collection.records.embedded_ids(m))
    return keyword, ChunkLegs(chunk, vector=vector[1] if vector else None, vector_rank=vector[0] if vector else None,
                              keyword=kw[1] if kw else None, keyword_rank=kw[0] if kw else None,
                              matched=matched, missing=missing, vectorless=vectorless)


def _words_held(collection: Collection, chunk: Chunk,
                keyword: KeywordMeta | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The keyword leg's kept words that the chunk's text holds, and those it lacks (compared as the index
    analyses them: folded and stemmed)."""
    if keyword is None or not keyword.kept:
        return (), ()
    index = collection.keyword
    terms = set(index.analyze(chunk.text))
    held = tuple(w for w in keyword.kept if any(t in terms for t in index.analyze(w)))
    return held, tuple(w for w in keyword.kept if w not in held)
