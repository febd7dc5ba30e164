"""HyDE's query vector: the mean of the embeddings of hypothetical answer passages and of the question.

Gao, Ma, Lin & Callan, "Precise Zero-Shot Dense Retrieval without Relevance Labels" (ACL 2023), eq. 2:
v = 1/(N+1) * (sum of f(d_k) for the N generated documents + f(q)). The passages only steer the vector
leg; the keyword leg still searches the words as typed. A passage the embedder fails on is left out of
the mean; when the question's own embedding fails, the result carries that error as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ragtui.config import Settings
from ragtui.model.chunks import leg_score
from ragtui.model.retrieval import Hit
from ragtui.retrieve.hybrid_retriever import QueryEmbedder, QueryEmbeddings


def hyde_embedder(base: QueryEmbedder, passages: Sequence[str]) -> QueryEmbedder:
    """A QueryEmbedder whose vector per model is the mean of `base`'s for the question and each passage."""

    async def embed(settings: Settings, query: str, models: Sequence[str]) -> QueryEmbeddings:
        own, *others = await asyncio.gather(base(settings, query, models),
                                            *(base(settings, p, models) for p in passages))
        out = QueryEmbeddings(errors=dict(own.errors), timings_ms=dict(own.timings_ms))
        for model, vector in own.vectors.items():
            vectors = [vector, *(o.vectors[model] for o in others if len(o.vectors.get(model, ())) == len(vector))]
            out.vectors[model] = [sum(column) / len(vectors) for column in zip(*vectors, strict=True)]
            out.timings_ms[model] = round(sum(o.timings_ms.get(model, 0.0) for o in (own, *others)), 2)
        return out

    return embed


def best_vector(hits: Sequence[Hit]) -> float:
    """The best cosine the vector leg gave any hit; 0 when it scored none."""
    return max((s for s in (leg_score(h.evidence, "vector") for h in hits) if s is not None), default=0.0)
