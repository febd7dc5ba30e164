"""Retrieval's nouns: the modes, a ranked hit, and retrieval_meta, how every collection was searched.

retrieval_meta says how each collection was searched (keyword tier, words kept and
dropped, IDF, synonyms, hits per leg) and how long each stage took. It is frozen
here; `to_json()` gives the shape `ragtui query --json`, `ragtui ask --json` and the
history file have always had, and `from_json()` reads it back (missing keys take
their defaults, so older records open too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ragtui.model.chunks import Chunk, LegRank, leg_score
from ragtui.model.filters import SearchFilter

Mode = Literal["hybrid", "vector", "keyword"]
MODES: tuple[Mode, ...] = get_args(Mode)


def legs_of(mode: Mode, *, keyword_enabled: bool) -> tuple[bool, bool]:
    """Which legs a query in `mode` runs, (vector, keyword): hybrid runs the keyword leg unless
    `[keyword] enabled` is off."""
    return mode != "keyword", mode == "keyword" or (mode == "hybrid" and keyword_enabled)


KeywordTier = Literal["off", "skipped", 1, 2]   # 1: all words (AND), 2: any word or synonym (OR)


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float                 # fused score (additive keyword boost, or RRF)
    rel_score: float             # (s - min) / (max - min) over the deduplicated hits
    legs: tuple[str, ...]        # "vector" and/or "keyword"
    evidence: tuple[LegRank, ...] = ()   # rank and score per leg, and the fused rank (why it was found)
    neighbor_of: str = ""        # a neighbour added by retrieve.neighbor_window: the chunk id of its hit
    distance: int = 0            # chunks away from that hit

    @property
    def rerank_score(self) -> float | None:
        """The reranker's relevance score ([rerank]); None when it did not score this hit."""
        return leg_score(self.evidence, "rerank")


@dataclass(frozen=True)
class KeywordMeta:
    """The keyword leg on one collection: its plan, the tier that answered, the synonyms added."""

    tier: KeywordTier = "off"
    words: tuple[str, ...] = ()
    idf: Mapping[str, float] = field(default_factory=dict)
    mean_idf: float = 0.0
    gate_passed: bool = False
    kept: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    synonym_budget: Mapping[str, int] = field(default_factory=dict)
    synonyms: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    hits: int = 0
    timings_ms: Mapping[str, float] = field(default_factory=dict)   # plan, and, synonyms, or
    and_hits: int | None = None  # what the AND tier found; None when it did not run
    reason: str = ""             # why the leg was skipped

    def to_json(self) -> dict[str, Any]:
        if self.tier == "off":
            return {"tier": "off"}
        out: dict[str, Any] = {
            "words": list(self.words), "idf": dict(self.idf), "mean_idf": self.mean_idf,
            "gate_passed": self.gate_passed, "kept": list(self.kept), "dropped": list(self.dropped),
            "synonym_budget": dict(self.synonym_budget), "tier": self.tier,
            "synonyms": {w: list(s) for w, s in self.synonyms.items()}, "hits": self.hits,
            "timings_ms": dict(self.timings_ms)}
        if self.and_hits is not None:
            out["and_hits"] = self.and_hits
        if self.reason:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KeywordMeta:
        return cls(tier=data.get("tier", "off"), words=tuple(data.get("words", ())), idf=dict(data.get("idf", {})),
                   mean_idf=data.get("mean_idf", 0.0), gate_passed=data.get("gate_passed", False),
                   kept=tuple(data.get("kept", ())), dropped=tuple(data.get("dropped", ())),
                   synonym_budget=dict(data.get("synonym_budget", {})),
                   synonyms={w: tuple(s) for w, s in data.get("synonyms", {}).items()},
                   hits=data.get("hits", 0), timings_ms=dict(data.get("timings_ms", {})),
                   and_hits=data.get("and_hits"), reason=data.get("reason", ""))


@dataclass(frozen=True)
class VectorMeta:
    """The vector leg on one collection: its embedding models and how many vectors each index holds."""

    models: tuple[str, ...] = ()
    vectors: Mapping[str, int] = field(default_factory=dict)   # per model that had a query vector
    chunks: int = 0                                            # chunks in the collection (keyword index)

    def to_json(self) -> dict[str, Any]:
        return {"models": list(self.models), "vectors": dict(self.vectors), "chunks": self.chunks}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VectorMeta:
        return cls(models=tuple(data.get("models", ())), vectors=dict(data.get("vectors", {})),
                   chunks=data.get("chunks", 0))


@dataclass(frozen=True)
class LegHits:
    """Chunks found per leg on one collection, and how many the merge kept."""

    vector: int = 0
    keyword: int = 0
    both: int = 0
    merged: int | None = None    # None until the merge ran

    def to_json(self) -> dict[str, Any]:
        out = {"vector": self.vector, "keyword": self.keyword, "both": self.both}
        if self.merged is not None:
            out["merged"] = self.merged
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LegHits:
        return cls(vector=data.get("vector", 0), keyword=data.get("keyword", 0), both=data.get("both", 0),
                   merged=data.get("merged"))


@dataclass(frozen=True)
class CollectionMeta:
    """How one collection was searched."""

    keyword: KeywordMeta = field(default_factory=KeywordMeta)
    vector: VectorMeta | None = None     # None in keyword mode
    hits: LegHits = field(default_factory=LegHits)
    fusion: str = "single leg"           # retrieve.fusion ("boost", "rrf", "norm") when both legs found something
    vector_ms: Mapping[str, float] = field(default_factory=dict)   # per model
    merge_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        timings: dict[str, Any] = {f"vector:{model}": ms for model, ms in self.vector_ms.items()}
        if self.keyword.tier != "off":
            timings["keyword"] = dict(self.keyword.timings_ms)
        if self.merge_ms is not None:
            timings["merge"] = self.merge_ms
        out: dict[str, Any] = {"timings_ms": timings}
        if self.vector is not None:
            out["vector"] = self.vector.to_json()
        out.update(keyword=self.keyword.to_json(), hits=self.hits.to_json(), fusion=self.fusion)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CollectionMeta:
        timings = data.get("timings_ms", {})
        vector = data.get("vector")
        return cls(keyword=KeywordMeta.from_json(data.get("keyword", {})),
                   vector=VectorMeta.from_json(vector) if vector is not None else None,
                   hits=LegHits.from_json(data.get("hits", {})), fusion=data.get("fusion", "single leg"),
                   vector_ms={k.removeprefix("vector:"): v for k, v in timings.items() if k.startswith("vector:")},
                   merge_ms=timings.get("merge"))


@dataclass(frozen=True)
class RerankMeta:
    """What the optional reranker did: its model and server, how many it scored, and each hit's score.

    `scores` maps a hit's node id ("collection/chunk id") to its relevance score.
    `error` is set when the reranker failed and the fused order stood.
    """

    model: str = ""
    host: str = ""
    candidates: int = 0
    scores: Mapping[str, float] = field(default_factory=dict)
    ms: float = 0.0
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "host": self.host, "candidates": self.candidates,
                               "scores": dict(self.scores), "ms": self.ms}
        if self.error:
            out["error"] = self.error
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RerankMeta:
        return cls(model=data.get("model", ""), host=data.get("host", ""), candidates=data.get("candidates", 0),
                   scores=dict(data.get("scores", {})), ms=data.get("ms", 0.0), error=data.get("error", ""))


@dataclass(frozen=True)
class StrategyMeta:
    """What the retrieval strategies ([strategies]) did for one question, and what they cost.

    `strategies`: those that ran ("multi-query", "fragments", "hyde", "sentence-window"); `queries`: the extra
    searches' texts (alternative queries, fragments); `hyde_passages`: the hypothetical passages whose
    embedding searched the vector leg; `best_vector`: the typed run's best cosine (adaptive HyDE compares it
    with its threshold); `llm_calls` and `llm_s`: the model's calls and the seconds they took; `searches`:
    retrievals run; `fallbacks`: why a strategy fell back to the question as typed.
    """

    strategies: tuple[str, ...] = ()
    queries: tuple[str, ...] = ()
    hyde_passages: tuple[str, ...] = ()
    best_vector: float | None = None
    llm_calls: int = 0
    llm_s: float = 0.0
    searches: int = 1
    fallbacks: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"strategies": list(self.strategies), "queries": list(self.queries),
                               "hyde_passages": list(self.hyde_passages), "llm_calls": self.llm_calls,
                               "llm_s": self.llm_s, "searches": self.searches, "fallbacks": list(self.fallbacks)}
        if self.best_vector is not None:
            out["best_vector"] = self.best_vector
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StrategyMeta:
        return cls(strategies=tuple(data.get("strategies", ())), queries=tuple(data.get("queries", ())),
                   hyde_passages=tuple(data.get("hyde_passages", ())), best_vector=data.get("best_vector"),
                   llm_calls=data.get("llm_calls", 0), llm_s=data.get("llm_s", 0.0),
                   searches=data.get("searches", 1), fallbacks=tuple(data.get("fallbacks", ())))


def node_id(collection: str, chunk_id: str) -> str:
    """A hit's id across collections: chunk ids are unique within a collection only."""
    return f"{collection}/{chunk_id}"


@dataclass(frozen=True)
class RetrievalMeta:
    """retrieval_meta: how every collection was searched, and the time each stage took (ms)."""

    mode: Mode = "hybrid"
    filter: SearchFilter = field(default_factory=SearchFilter)   # the part of each collection searched
    collections: Mapping[str, CollectionMeta] = field(default_factory=dict)
    embed_ms: Mapping[str, float] = field(default_factory=dict)   # the query embedding, per model
    legs_and_merge_ms: float | None = None
    postprocess_ms: float | None = None
    returned: int | None = None          # hits after the postprocessors; None when they did not run
    rerank: RerankMeta | None = None     # None when no reranker was asked
    below_min_similarity: int = 0        # vector-only hits left out by retrieve.min_similarity
    below_floors: int = 0                # hits left out by retrieve.min_token_overlap / retrieve.min_vector_score
    strategies: StrategyMeta | None = None   # None when no retrieval strategy ([strategies]) was on

    def to_json(self) -> dict[str, Any]:
        timings: dict[str, Any] = {"embed": dict(self.embed_ms)}
        if self.legs_and_merge_ms is not None:
            timings["legs_and_merge"] = self.legs_and_merge_ms
        if self.postprocess_ms is not None:
            timings["postprocess"] = self.postprocess_ms
        out: dict[str, Any] = {"mode": self.mode,
                               "collections": {name: c.to_json() for name, c in self.collections.items()},
                               "timings_ms": timings}
        if self.filter:
            out["filter"] = self.filter.to_json()
        if self.returned is not None:
            out["returned"] = self.returned
        if self.rerank is not None:
            out["rerank"] = self.rerank.to_json()
        if self.below_min_similarity:
            out["below_min_similarity"] = self.below_min_similarity
        if self.below_floors:
            out["below_floors"] = self.below_floors
        if self.strategies is not None:
            out["strategies"] = self.strategies.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RetrievalMeta:
        timings = data.get("timings_ms", {})
        return cls(mode=data.get("mode", "hybrid"), filter=SearchFilter.from_json(data.get("filter")),
                   collections={name: CollectionMeta.from_json(c)
                                for name, c in data.get("collections", {}).items()},
                   embed_ms=dict(timings.get("embed", {})), legs_and_merge_ms=timings.get("legs_and_merge"),
                   postprocess_ms=timings.get("postprocess"), returned=data.get("returned"),
                   rerank=RerankMeta.from_json(data["rerank"]) if data.get("rerank") else None,
                   below_min_similarity=data.get("below_min_similarity", 0),
                   below_floors=data.get("below_floors", 0),
                   strategies=StrategyMeta.from_json(data["strategies"]) if data.get("strategies") else None)


@dataclass(frozen=True)
class Retrieval:
    query: str
    hits: list[Hit]              # best first, after min_similarity, cap, dedupe, min_score, pre_annotate_keep
                                 # and annotate_max
    meta: RetrievalMeta
    keyword_only: bool = False   # no vector search was possible (embedder or Chroma server down, no vectors)
    notices: list[str] = field(default_factory=list)  # degraded modes to show the user, in plain words
    vectors_unreachable: str = ""  # the Chroma server (host:port) that did not answer; empty if none failed
    nothing_found: str = ""      # the notice (one of `notices`) saying this search found nothing; empty if it did
