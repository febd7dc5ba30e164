"""Optional cross-encoder reranking over HTTP ([rerank] in config.toml).

The fused top `rerank.top_n` results go to POST `<base_url>/rerank` as
`{model, query, documents, top_n}`; the reply `{results: [{index,
relevance_score}]}` (llama.cpp's server with --reranking, vLLM, Infinity and
other Jina/Cohere-compatible servers) reorders them. A cross-encoder reads the
query and the passage together, which the bi-encoder and BM25 legs cannot, so
it is the best judge of the order when one is at hand; it is off by default
because it needs a server next to Ollama.

The reply is untrusted: anything but a list of distinct in-range indices with
finite scores is a failure, and every failure (unreachable, timeout, HTTP
error, malformed body) keeps the fused order and says so, naming the server.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragtui.errors import RagtuiError
from ragtui.model.retrieval import RerankMeta
from ragtui.server_limits import ReplyLimit, ReplyTooSlow, async_client, loads

if TYPE_CHECKING:
    from ragtui.config_sections import RerankSettings


class RerankError(RagtuiError):
    """The reranker gave no usable order."""


@dataclass(frozen=True)
class Reranked:
    """The new order as indices into the candidates (best first), with each scored candidate's score."""

    order: list[int]
    scores: dict[int, float]


def endpoint(base_url: str) -> str:
    return base_url.rstrip("/") + "/rerank"


async def rerank(settings: RerankSettings, query: str, documents: Sequence[str], max_bytes: int) -> Reranked:
    """The reranker's order of `documents` for `query`; raises RerankError (said in plain words) on any failure.

    Candidates the server did not return keep their fused order after the ones it scored. The whole reply
    must come within rerank.timeout and `max_bytes` (limits.max_reply_mb).
    """
    import httpx

    body = {"model": settings.model, "query": query, "documents": list(documents), "top_n": len(documents)}
    try:
        async with async_client(timeout=settings.timeout, max_bytes=max_bytes, deadline_s=settings.timeout,
                                deadline_key="rerank.timeout") as client:
            response = await client.post(endpoint(settings.base_url), json=body)
    except ReplyTooSlow:
        raise RerankError(f"no answer within {settings.timeout:g} s (rerank.timeout)") from None
    except ReplyLimit as exc:
        raise RerankError(str(exc)) from None
    except httpx.HTTPError as exc:
        raise RerankError(str(exc) or type(exc).__name__) from None
    if response.status_code != 200:
        raise RerankError(f"HTTP {response.status_code}: {_clip(response.text)}")
    try:
        data = loads(response.content, endpoint(settings.base_url))
    except ValueError:
        raise RerankError(f"the reply is not JSON: {_clip(response.text)}") from None
    except ReplyLimit as exc:
        raise RerankError(str(exc)) from None
    scores = parse_results(data, len(documents))
    ranked = sorted(scores, key=lambda i: -scores[i])
    return Reranked(order=ranked + [i for i in range(len(documents)) if i not in scores], scores=scores)


def parse_results(data: Any, count: int) -> dict[int, float]:
    """index -> relevance_score from a `/rerank` reply; RerankError unless every entry is sound."""
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or not results:
        raise RerankError("the reply has no results list")
    scores: dict[int, float] = {}
    for item in results:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if type(index) is not int or not 0 <= index < count or index in scores:
            raise RerankError(f"the reply names a document index that was not sent once: {_clip(repr(index))}")
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
            raise RerankError(f"document {index} has no numeric relevance_score")
        scores[index] = float(score)
    return scores


async def rerank_meta(settings: RerankSettings, query: str, ids: Sequence[str], documents: Sequence[str],
                      max_bytes: int) -> tuple[list[int] | None, RerankMeta]:
    """The new order of the candidates (None: keep the fused order) and what to record about it."""
    started = time.perf_counter()
    meta = RerankMeta(model=settings.model, host=settings.base_url, candidates=len(documents))
    try:
        result = await rerank(settings, query, documents, max_bytes)
    except RerankError as exc:
        return None, RerankMeta(model=meta.model, host=meta.host, candidates=meta.candidates,
                                ms=_ms(started), error=str(exc))
    return result.order, RerankMeta(model=meta.model, host=meta.host, candidates=meta.candidates,
                                    scores={ids[i]: s for i, s in result.scores.items()}, ms=_ms(started))


def failure_notice(meta: RerankMeta) -> str:
    return f"The reranker at {meta.host} gave no usable order ({meta.error}); the fused order stands."


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def _clip(text: str, limit: int = 120) -> str:
    """One printable line: a server's text never reaches the terminal as control sequences."""
    text = "".join(c for c in " ".join(text.split()) if c.isprintable())
    return text if len(text) <= limit else text[:limit - 1] + "…"
