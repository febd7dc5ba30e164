"""What retrieval hands to the research session: ranked hits plus retrieval_meta."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragtui.chunks import Chunk


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float                 # fused score (RAGWeed 3d boost, or RRF)
    rel_score: float             # relative score in [0, 1] after dedupe (RAGWeed 3f)
    legs: tuple[str, ...]        # "vector" and/or "keyword"


@dataclass
class Retrieval:
    query: str
    hits: list[Hit]              # best first, after cap, dedupe, min_score and pre_annotate_keep
    meta: dict[str, Any]         # retrieval_meta: per collection tier, words kept/dropped, IDF, synonyms,
                                 # hits per leg, timings per stage (ms)
    keyword_only: bool = False   # the embedder was unreachable: only the keyword leg answered
    notices: list[str] = field(default_factory=list)  # degraded modes to show the user, in plain words
