"""The hybrid retriever: vector and keyword legs per collection, merged.

Per collection, in parallel: the vector leg (the lowercased query embedded once
per model, each of the collection's Chroma indexes searched, best cosine per
chunk kept) and the Whoosh keyword leg (keyword_leg.py); then the merge by
`retrieve.fusion`. Imports LlamaIndex at module level: `pipeline.retrieve` loads
it only when a query runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ragtui import heavy

heavy.load("llama_index")  # first, so that this module's imports of it are lookups (ragtui/heavy.py)
from llama_index.core.base.base_retriever import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402

from ragtui.config import Settings  # noqa: E402
from ragtui.model.chunks import Chunk  # noqa: E402
from ragtui.model.filters import SearchFilter  # noqa: E402
from ragtui.model.retrieval import (  # noqa: E402
    MODES,
    CollectionMeta,
    KeywordMeta,
    LegHits,
    Mode,
    RetrievalMeta,
    VectorMeta,
    legs_of,
    node_id,
)
from ragtui.retrieve.filtering import FilterScope, resolve  # noqa: E402
from ragtui.retrieve.fusion import (  # noqa: E402
    best_per_chunk,
    boost_merge,
    mean_over_legs,
    normalised,
    ranked,
    reciprocal_ranks,
)
from ragtui.retrieve.keyword_leg import KeywordResult, keyword_search  # noqa: E402
from ragtui.retrieve.senses import QuerySynonyms, Synonyms  # noqa: E402
from ragtui.retrieve.wordnet import Lexicon, SynonymLookup, WordNetBusy, missing_lexicon_notice  # noqa: E402
from ragtui.retry import retried, transient  # noqa: E402
from ragtui.server_limits import too_deep  # noqa: E402
from ragtui.stores.vector import check_vectors  # noqa: E402

if TYPE_CHECKING:
    from ragtui.library import Collection


@dataclass
class Scored:
    """One chunk's evidence before fusion: which legs found it and with what score."""

    chunk: Chunk
    collection: str
    vector: float | None = None      # best cosine across the collection's models
    keyword: float | None = None     # Whoosh BM25F score

    @property
    def legs(self) -> tuple[str, ...]:
        return tuple(leg for leg, s in (("vector", self.vector), ("keyword", self.keyword)) if s is not None)


@dataclass
class QueryEmbeddings:
    vectors: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)


QueryEmbedder = Callable[[Settings, str, Sequence[str]], Awaitable[QueryEmbeddings]]


def describe_embed_error(settings: Settings, model: str, exc: BaseException) -> str:
    """One plain sentence for an embedding failure, with the hint when the model is missing (`ollama pull`, or
    the OpenAI-compatible server's model list)."""
    from ragtui.embed_api import embed_server_name

    status = getattr(exc, "status_code", None)
    lines = str(exc).strip().splitlines()        # a pydantic error on a malformed answer runs to many lines
    text = lines[0][:200] if lines else type(exc).__name__
    openai = settings.embed.provider == "openai"
    if status == 404 or (not openai and "not found" in text.lower()):
        if openai:
            return (f"embedding model {model} is not served by {embed_server_name(settings)}; check [embed] model "
                    "against the server's /v1/models")
        return f"embedding model {model} is not available at {settings.ollama.host}; run `ollama pull {model}`"
    return f"{embed_server_name(settings)} did not embed the query with {model} ({text})"


async def embed_query(settings: Settings, query: str, models: Sequence[str]) -> QueryEmbeddings:
    """The lowercased query embedded once per model, in parallel, by the server the ingest embedded with
    (embed.provider), a dropped connection or a busy server asked again (embed.retries, embed.backoff_s),
    or taken from the process's cache of query vectors (retrieve/query_vectors.py);
    failures recorded, not raised."""
    from ragtui.embed_api import embed_url, embedding_client
    from ragtui.retrieve.query_vectors import QUERY_CACHE

    out = QueryEmbeddings()
    text = query.lower()
    server = f"{settings.embed.provider} {embed_url(settings)}"

    async def one(model: str) -> None:
        started = time.perf_counter()
        if (cached := QUERY_CACHE.get(server, model, text)) is not None:
            out.vectors[model] = cached
            out.timings_ms[model] = round((time.perf_counter() - started) * 1000, 2)
            return
        embedder = embedding_client(settings, model)
        try:     # the client's transport holds the whole answer to its timeout and limits.max_reply_mb
            vector = await retried(lambda: embedder.aget_query_embedding(text), settings.embed.backoff, transient)
            out.vectors[model] = check_vectors([vector], 1, None)[0]
            QUERY_CACHE.put(server, model, text, out.vectors[model])
        except RecursionError:    # the client's JSON parser on a deeply nested answer
            out.errors[model] = describe_embed_error(settings, model, too_deep(embed_url(settings)))
        except Exception as exc:  # connection, HTTP, model and malformed-answer errors all mean "no vector leg"
            out.errors[model] = describe_embed_error(settings, model, exc)
        out.timings_ms[model] = round((time.perf_counter() - started) * 1000, 2)

    await asyncio.gather(*(one(m) for m in dict.fromkeys(models)))
    return out


Leg = str    # "vector" or "keyword"


def fuse(scored: Sequence[Scored], fusion: str, *, weight: float, rrf_k: int, answered: int,
         raw_single: bool = True) -> list[tuple[Scored, float]]:
    """One collection's merged scores, best first: reciprocal rank fusion, the normalised score average, or the
    additive keyword boost.

    RRF and the normalised average are means over the `answered` legs, the legs
    that answered for this collection (fusion.mean_over_legs): a collection
    where only the keyword leg could run scores its best keyword hit as a
    collection with both legs scores a chunk ranked first by both, so the
    collections' results pool on one scale. The boost adds a constant for a
    keyword match and has no such scale: a keyword-only collection's chunks
    score keyword_weight under it.

    When only one leg produced anything and `raw_single` is set (every
    collection is in the same single-leg situation), that leg's own scores rank
    the results: a keyword-only answer is ordered by BM25, not by a constant
    boost.
    """
    by_id = {s.chunk.id: s for s in scored}
    vector = {s.chunk.id: s.vector for s in scored if s.vector is not None}
    keyword = {s.chunk.id: s.keyword for s in scored if s.keyword is not None}
    if raw_single and not keyword:
        merged = vector
    elif raw_single and not vector:
        merged = keyword
    elif fusion == "rrf":
        merged = mean_over_legs([reciprocal_ranks(ranked(leg), rrf_k) for leg in (vector, keyword)], answered)
    elif fusion == "norm":
        merged = mean_over_legs([normalised(vector), normalised(keyword)], answered)
    else:
        merged = boost_merge(vector, ranked(keyword), weight)
    return [(by_id[cid], merged[cid]) for cid in ranked(merged)]


def single_leg_everywhere(answered: Sequence[frozenset[Leg]]) -> bool:
    """Every collection that answered at all answered with the same one leg (its raw scores then rank them)."""
    sets = {legs for legs in answered if legs}
    return len(sets) <= 1 and all(len(legs) == 1 for legs in sets)


def answered_legs(meta: CollectionMeta | None, vector_ran: bool) -> frozenset[Leg]:
    """The legs that answered for one collection: the vector leg when one of its indexes was searched, the keyword
    leg when it ran a tier (not off, not skipped by its information gate). A leg that answered with nothing counts.

    A gate skip is left out like a leg that could not run: the gate skips when the query's words are so common
    in this collection (mean IDF below keyword.min_query_ic; any word in a one-chunk collection) that matching
    them says nothing. Its chunks mostly hold those words, so counting the leg as a search that found none of
    them would halve this collection's vector hits for the wrong reason, and most where it is on the topic."""
    if meta is None:
        return frozenset()
    return frozenset({*(["vector"] if vector_ran else []), *(["keyword"] if meta.keyword.tier in (1, 2) else [])})


class HybridRetriever(BaseRetriever):
    """Vector + keyword legs per collection, merged; LlamaIndex `BaseRetriever`.

    `lexicon` supplies synonyms for the keyword leg. `embed` replaces the Ollama
    query embedding (evaluation and benchmarks pass precomputed vectors). `search_filter`
    keeps both legs to part of each collection (retrieve/filtering.py). After a
    call, `meta` holds its RetrievalMeta, `notices` the degraded modes in plain words, `keyword_only`
    whether no vector leg ran anywhere, `vectors_unreachable` the address of the Chroma server that
    did not answer (empty when it did, or none is used), and `evidence` the per-leg scores of
    every returned node id.
    """

    def __init__(self, settings: Settings, collections: Sequence[Collection], *, lexicon: Lexicon,
                 mode: Mode = "hybrid", synonyms: bool | None = None, top_k: int | None = None,
                 embed: QueryEmbedder | None = None, search_filter: SearchFilter | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.settings = settings
        self.collections = list(collections)
        self.lexicon = lexicon
        self.mode = mode
        self.use_synonyms = settings.synonyms.enabled if synonyms is None else synonyms
        self.top_k = top_k or settings.retrieve.top_k
        self.embed = embed or embed_query
        self.search_filter = search_filter or SearchFilter()
        self.meta = RetrievalMeta(mode=mode, filter=self.search_filter)
        self.notices: list[str] = []
        self.keyword_only = False
        self.vectors_unreachable = ""
        self.evidence: dict[str, Scored] = {}
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return asyncio.run(self._aretrieve(query_bundle))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        self.notices, self.evidence, self.vectors_unreachable = [], {}, ""
        started = time.perf_counter()
        lookup = self._synonym_lookup()

        models = self._models_wanted()
        # The stores' cold loads (a first query's Whoosh searcher and Chroma's HNSW index, ~1 s at 100k chunks)
        # overlap the query's embedding; a failure there is left for the legs to meet and report as they do.
        opening = [asyncio.to_thread(c.prepare, [m for m in c.models if m in models] if models else [],
                                     keyword=self._runs_keyword())
                   for c in self.collections]
        opened = asyncio.gather(*opening, return_exceptions=True)
        try:
            embeddings = await self.embed(self.settings, query, models) if models else QueryEmbeddings()
        finally:
            await opened
        for error in dict.fromkeys(embeddings.errors.values()):
            self.notices.append(error + "; keyword matches only where no other model answered.")
        synonyms = self._query_synonyms(lookup, embeddings)

        results = await asyncio.gather(*(asyncio.to_thread(self._guarded_legs, c, query, embeddings, synonyms)
                                         for c in self.collections))
        if isinstance(synonyms, QuerySynonyms) and synonyms.error:
            self.notices.append(f"WordNet senses could not be compared with the query ({synonyms.model}: "
                                f"{synonyms.error}); synonyms came from each word's first sense.")
        vector_ran = any(ran for _, _, ran in results)
        self.keyword_only = self.mode != "keyword" and not vector_ran
        answered = [answered_legs(meta, ran) for _, meta, ran in results]
        raw_single = self.mode != "hybrid" or single_leg_everywhere(answered)
        pooled: list[tuple[Scored, float]] = []
        collections: dict[str, CollectionMeta] = {}
        for collection, (evidence, meta, _), legs in zip(self.collections, results, answered, strict=True):
            if meta is None:
                continue
            t = time.perf_counter()
            fused = fuse(evidence, self.settings.retrieve.fusion, weight=self.settings.retrieve.keyword_weight,
                         rrf_k=self.settings.retrieve.rrf_k, answered=len(legs), raw_single=raw_single)
            collections[collection.name] = replace(meta, merge_ms=round((time.perf_counter() - t) * 1000, 2),
                                                   hits=replace(meta.hits, merged=len(fused)))
            pooled.extend(fused)
        self.notices = list(dict.fromkeys(self.notices))     # a server that is down is said once, not per collection
        if self.keyword_only and self.mode == "vector":
            self.notices.append("No vector index answered, and vector mode runs no keyword leg: no results.")
        pooled.sort(key=lambda item: -item[1])
        nodes = []
        for found, score in pooled:
            nid = node_id(found.collection, found.chunk.id)
            self.evidence[nid] = found
            nodes.append(NodeWithScore(node=TextNode(id_=nid, text=found.chunk.text,
                                                     metadata=found.chunk.meta.to_dict()), score=score))
        self.meta = RetrievalMeta(mode=self.mode, filter=self.search_filter, collections=collections,
                                  embed_ms=embeddings.timings_ms,
                                  legs_and_merge_ms=round((time.perf_counter() - started) * 1000, 2))
        return nodes

    def _models_wanted(self) -> list[str]:
        if not legs_of(self.mode, keyword_enabled=self.settings.keyword.enabled)[0]:
            return []
        return list(dict.fromkeys(m for c in self.collections for m in c.models))

    def _synonym_lookup(self) -> SynonymLookup | None:
        if not self.use_synonyms or self.mode == "vector":
            return None
        try:
            lookup = self.lexicon.lookup()
        except WordNetBusy as busy:
            self.notices.append(str(busy))
            return None
        if lookup is None:
            self.notices.append(missing_lexicon_notice(self.lexicon.lexicon))
        return lookup

    def _query_synonyms(self, lookup: SynonymLookup | None, embeddings: QueryEmbeddings) -> Synonyms | None:
        """Senses chosen by the query's vector (the primary model's when it answered, else the first that
        did); the first synset when no vector exists (keyword mode, embedder down) or synonyms.sense = "first"."""
        if lookup is None or not embeddings.vectors or self.settings.synonyms.sense == "first":
            return lookup
        primary = self.settings.embed.model
        model = primary if primary in embeddings.vectors else next(iter(embeddings.vectors))
        query_vector = embeddings.vectors[model]
        embedder = None

        def embed(texts: list[str]) -> list[list[float]]:
            nonlocal embedder
            from ragtui.embed_api import embedding_client

            embedder = embedder or embedding_client(self.settings, model)
            return check_vectors(embedder.get_text_embedding_batch(texts), len(texts), len(query_vector))

        return QuerySynonyms(lookup, model=model, query_vector=query_vector, embed=embed,
                             cache=self.lexicon.sense_vectors)

    def _guarded_legs(self, collection: Collection, query: str, embeddings: QueryEmbeddings,
                      lookup: Synonyms | None) -> tuple[list[Scored], CollectionMeta | None, bool]:
        """`_collection_legs`, except that a collection found damaged or deleted while it is searched is left out
        with a notice saying which and why (no meta), and the other collections' results still come back."""
        try:
            return self._collection_legs(collection, query, embeddings, lookup)
        except Exception as exc:  # a damaged file can make its library raise anything
            self.notices.append(f"{collection.unreadable(exc, store='whoosh')}; it was not searched.")
            return [], None, False

    def _collection_legs(self, collection: Collection, query: str, embeddings: QueryEmbeddings,
                         lookup: Synonyms | None) -> tuple[list[Scored], CollectionMeta, bool]:
        """Both legs on one collection (in a worker thread); the merge waits until every collection answered."""
        scored: dict[str, Scored] = {}
        vector_ms: dict[str, float] = {}
        vector, vector_ran = None, False
        run_keyword = self._runs_keyword()
        scope = self._scope(collection)
        with ThreadPoolExecutor(max_workers=2) as pool:
            kw_future = pool.submit(self._keyword_leg, collection, query, lookup, scope) if run_keyword else None
            if self.mode != "keyword":
                vector_ran, vector = self._guarded_vector_leg(collection, embeddings, scored, vector_ms, scope)
            keyword = kw_future.result() if kw_future else None
        if keyword is not None:
            for chunk, score in keyword.hits:
                scored.setdefault(chunk.id, Scored(chunk, collection.name)).keyword = score
        hits = LegHits(vector=sum(s.vector is not None for s in scored.values()),
                       keyword=sum(s.keyword is not None for s in scored.values()),
                       both=sum(len(s.legs) == 2 for s in scored.values()))
        meta = CollectionMeta(keyword=keyword.meta if keyword is not None else KeywordMeta(), vector=vector,
                              hits=hits, vector_ms=vector_ms,
                              fusion=self.settings.retrieve.fusion if hits.vector and hits.keyword else "single leg")
        return list(scored.values()), meta, vector_ran

    def _runs_keyword(self) -> bool:
        return legs_of(self.mode, keyword_enabled=self.settings.keyword.enabled)[1]

    def _scope(self, collection: Collection) -> FilterScope | None:
        """What of this collection the filter leaves (None without a filter); an empty part is said."""
        if not self.search_filter:
            return None
        scope = resolve(collection.records, self.search_filter)
        if scope.empty:
            self.notices.append(f"Nothing in collection {collection.name} lies inside the filter "
                                f"{' '.join(self.search_filter.chips())}.")
        return scope

    def _keyword_leg(self, collection: Collection, query: str, lookup: Synonyms | None,
                     scope: FilterScope | None) -> KeywordResult:
        """The keyword leg; again without synonyms when WordNet turns busy while they are looked up."""
        def search(synonyms: Synonyms | None) -> KeywordResult:
            return keyword_search(collection.keyword, query, keyword=self.settings.keyword, top_k=self.top_k,
                                  synonyms=synonyms, max_synonyms=self.settings.synonyms.max_per_word, within=scope)
        try:
            return search(lookup)
        except WordNetBusy as busy:
            self.notices.append(str(busy))
            return search(None)

    def _guarded_vector_leg(self, collection: Collection, embeddings: QueryEmbeddings, scored: dict[str, Scored],
                            timings_ms: dict[str, float], scope: FilterScope | None) -> tuple[bool, VectorMeta | None]:
        """`_vector_leg`, except that a vector store that cannot be read leaves the collection keyword-only,
        with a notice naming it (a deleted collection is left out altogether: CollectionGone goes on up)."""
        from ragtui.library import CollectionGone
        from ragtui.stores.vector import VectorServerDown

        try:
            return self._vector_leg(collection, embeddings, scored, timings_ms, scope)
        except VectorServerDown as down:
            scored.clear()
            timings_ms.clear()
            self.vectors_unreachable = down.address
            self.notices.append(f"The Chroma server at {down.address} is not reachable ({down.reason}): "
                                "keyword matches only, until it answers again (no restart needed).")
            return False, None
        except Exception as exc:  # a damaged Chroma store can make chromadb raise anything
            error = collection.unreadable(exc, store="chroma", vectors=True)
            if isinstance(error, CollectionGone) or not error.damage.vectors_only:
                raise error from None
            scored.clear()
            timings_ms.clear()
            self.notices.append(f"{error}; it answered with keyword matches only.")
            return False, None

    def _say_missing_vectors(self, collection: Collection, chunks: int, vectors: dict[str, int]) -> None:
        """The one rule for what a query says about a collection's chunks without vectors, by why they have
        none: an ingest still embedding them, an ingest cut before its end, or vectors its ingest could not
        make (the embedder was unreachable)."""
        name = collection.name
        state = collection.state
        if state in ("ingesting", "interrupted"):
            model = next(iter(vectors), collection.settings.embed.model)
            embedded = vectors[model] if model in vectors else len(collection.records.embedded_ids(model))
            if state == "ingesting":
                self.notices.append(f"Collection {name}: embedding in progress: {embedded:,} of {chunks:,}; the "
                                    "chunks not embedded yet are found by keyword matches only.")
            else:
                self.notices.append(f"Collection {name}: ingest cancelled: run it again to finish ({embedded:,} of "
                                    f"{chunks:,} chunks embedded; the others are found by keyword matches only).")
        elif not any(vectors.values()):
            self.notices.append(f"Collection {name} has no embeddings yet (its ingest could not reach the "
                                "embedder); it answered with keyword matches only. Re-run the ingest to embed it.")
        else:
            for model, count in vectors.items():
                if count < chunks:
                    self.notices.append(f"Collection {name}: {chunks - count} of {chunks} chunks have no {model} "
                                        "vectors yet; only the keyword leg can find those.")

    def _vector_leg(self, collection: Collection, embeddings: QueryEmbeddings, scored: dict[str, Scored],
                    timings_ms: dict[str, float], scope: FilterScope | None) -> tuple[bool, VectorMeta]:
        """Search every model index the collection has; False when none could answer (keyword-only)."""
        from ragtui.library import reembed_command

        models = collection.models
        chunks = collection.keyword.doc_count()
        answered: list[dict[str, float]] = []
        vectors: dict[str, int] = {}
        for model in models:
            if model not in embeddings.vectors:
                continue
            t = time.perf_counter()
            query_vector = embeddings.vectors[model]
            with collection.vector_access():
                index = collection.vectors(model)
                dim = index.dimension()
                if dim is not None and dim != len(query_vector):
                    self.notices.append(f"The query's {model} embedding has {len(query_vector)} dimensions but "
                                        f"collection {collection.name}'s index has {dim}; its vector leg is "
                                        "skipped (keyword matches only). If the model is right, re-embed the "
                                        f"collection: {reembed_command(collection.name, model)}.")
                    continue
                vectors[model] = index.count()
                hits = index.query(query_vector, self.top_k, sources=scope.sources if scope else None,
                                   ids=scope.ids if scope else None)
            timings_ms[model] = round((time.perf_counter() - t) * 1000, 2)
            answered.append(dict(hits))
        self._vector_chunks(collection, answered, scored)
        meta = VectorMeta(models=tuple(models), vectors=vectors, chunks=chunks)
        if models and not vectors:
            return False, meta   # no query vector for any of its models: the embedding failure was already said
        lost = self._vectors_lost(collection, {m: n for m, n in vectors.items() if n < chunks})
        if not models or (chunks and not any(vectors.values())):
            if not lost:
                self._say_missing_vectors(collection, chunks, vectors)
            return False, meta
        if any(count < chunks and model not in lost for model, count in vectors.items()):
            self._say_missing_vectors(collection, chunks, {m: n for m, n in vectors.items() if m not in lost})
        for cid, score in best_per_chunk(*answered).items():
            scored[cid].vector = score
        return bool(answered), meta

    @staticmethod
    def _vector_chunks(collection: Collection, answered: list[dict[str, float]], scored: dict[str, Scored]) -> None:
        """The chunks of the vector leg's hits, read from the keyword index (Chroma holds ids and vectors only,
        stores/vector.py); a hit the keyword index does not hold (its file re-indexed meanwhile) is left out."""
        wanted = [cid for cid in dict.fromkeys(cid for hits in answered for cid in hits) if cid not in scored]
        for chunk in collection.keyword.get(wanted) if wanted else []:
            scored[chunk.id] = Scored(chunk, collection.name)
        for hits in answered:
            for cid in [cid for cid in hits if cid not in scored]:
                del hits[cid]

    def _vectors_lost(self, collection: Collection, short: dict[str, int]) -> set[str]:
        """The models (of those holding fewer vectors than the collection has chunks) whose store holds fewer
        vectors than the collection's records say were stored in it, each said in a notice: the store lost
        them (a Chroma server's data replaced or its collection deleted), and re-embedding puts them back."""
        from ragtui.library import reembed_command

        where = (f"the Chroma server at {self.settings.chroma.host}:{self.settings.chroma.port}"
                 if self.settings.chroma.host else "its Chroma store")
        lost = set()
        for model, count in short.items():
            stored = collection.records.embedded_count(model)
            if count < stored:
                lost.add(model)
                self.notices.append(f"Collection {collection.name}: its records say {stored} chunks have {model} "
                                    f"vectors, but {where} holds {count}; the others are found by keyword only. "
                                    f"Put them back with {reembed_command(collection.name, model)}.")
        return lost
