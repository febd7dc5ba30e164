"""The optional reranker ([rerank]) against a fake /v1/rerank server on loopback: it reorders the fused
top N and its scores reach the hits, the retrieval meta and a reopened session; every failure keeps
the fused order and says so, naming the server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ragtui.config import ConfigError, Settings
from ragtui.history import HistoryStore
from ragtui.model.retrieval import Retrieval
from ragtui.workspace import Workspace
from tests.collection_builder import build_collection
from tests.fake_rerank import FakeRerank

FILES = {
    "filters.txt": ["Water filtration removes sediment; the filtration cartridge needs replacing."],
    "sand.txt": ["Sand filtration and carbon filtration compared for water."],
    "pumps.txt": ["Pump systems move water through a filtration stage."],
    "wells.txt": ["A well gives water; test it for nitrates every year."],
    "rain.txt": ["Rain barrels collect water from the roof."],
}
QUERY = "water filtration"


@pytest.fixture
def reranker() -> Iterator[FakeRerank]:
    server = FakeRerank().start()
    yield server
    server.stop()


@pytest.fixture
def library(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    """Settings (with these overrides) over one collection built once."""
    build_collection(make_settings(), "lib", FILES)
    return lambda *overrides: make_settings("retrieve.max_chunks_per_file=5",
                                                  "retrieve.min_similarity=0", *overrides)


async def retrieve(settings: Settings) -> Retrieval:
    async with Workspace(settings) as workspace:
        return await workspace.retrieve(QUERY, ["lib"])


def sources(result: Retrieval) -> list[str]:
    return [h.chunk.meta.source for h in result.hits]


def reversed_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """Score the documents in the reverse of the order they were sent: the fused last becomes first."""
    count = len(reply["results"])
    return {"results": [{"index": i, "relevance_score": float(i)} for i in range(count)]}


async def test_the_reranker_reorders_the_fused_top_n_and_its_scores_are_recorded(
        library: Callable[..., Settings], reranker: FakeRerank) -> None:
    fused = await retrieve(library())
    assert len(fused.hits) == 5 and fused.meta.rerank is None and all(h.rerank_score is None for h in fused.hits)

    reranker.rewrite = reversed_reply
    result = await retrieve(library("rerank.enabled=true", f"rerank.base_url={reranker.url}",
                                    "rerank.model=bge-reranker", "rerank.top_n=5"))
    assert sources(result) == sources(fused)[::-1]
    assert [h.rerank_score for h in result.hits] == [4.0, 3.0, 2.0, 1.0, 0.0]
    request = reranker.requests[-1]
    assert request["model"] == "bge-reranker" and request["query"] == QUERY and request["top_n"] == 5
    assert request["documents"] == [h.chunk.text for h in fused.hits]
    # each hit keeps its own fused score; the relative scores follow the new order
    assert {h.chunk.id: h.score for h in result.hits} == {h.chunk.id: h.score for h in fused.hits}
    assert [h.rel_score for h in result.hits] == [h.rel_score for h in fused.hits]
    assert result.notices == []
    meta = result.meta.rerank
    assert meta is not None and meta.model == "bge-reranker" and meta.candidates == 5 and not meta.error
    assert meta.scores == {f"lib/{h.chunk.id}": h.rerank_score for h in result.hits}
    assert result.meta.to_json()["rerank"]["scores"] == dict(meta.scores)


async def test_only_the_top_n_is_reordered(library: Callable[..., Settings], reranker: FakeRerank) -> None:
    fused = await retrieve(library())
    reranker.rewrite = reversed_reply
    result = await retrieve(library("rerank.enabled=true", f"rerank.base_url={reranker.url}", "rerank.model=m",
                                    "rerank.top_n=2"))
    assert len(reranker.requests[-1]["documents"]) == 2
    assert sources(result) == [*sources(fused)[1::-1], *sources(fused)[2:]]
    assert [h.rerank_score for h in result.hits][2:] == [None, None, None]


async def test_a_real_order_from_the_fake_cross_encoder(library: Callable[..., Settings],
                                                       reranker: FakeRerank) -> None:
    result = await retrieve(library("rerank.enabled=true", f"rerank.base_url={reranker.url}", "rerank.model=m"))
    scores = [h.rerank_score for h in result.hits]
    assert scores == sorted(scores, reverse=True)      # type: ignore[type-var]
    assert scores[0] == 1.0 and scores[-1] == 0.5      # both words; "water" only


FAILURES: dict[str, Callable[[FakeRerank], None]] = {
    "http error": lambda f: setattr(f, "status", 503),
    "not json": lambda f: setattr(f, "raw", b"<html>oops</html>"),
    "no results": lambda f: setattr(f, "raw", b'{"data": []}'),
    "index out of range": lambda f: setattr(f, "rewrite", lambda r: {"results": [{"index": 99,
                                                                                   "relevance_score": 1.0}]}),
    "index twice": lambda f: setattr(f, "rewrite", lambda r: {"results": [r["results"][0], r["results"][0]]}),
    "score not a number": lambda f: setattr(f, "rewrite", lambda r: {"results": [{"index": 0,
                                                                                  "relevance_score": "high"}]}),
    "too slow": lambda f: setattr(f, "delay", 1.5),
}


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_a_failing_reranker_keeps_the_fused_order_with_a_notice(
        library: Callable[..., Settings], reranker: FakeRerank, failure: str) -> None:
    fused = await retrieve(library())
    FAILURES[failure](reranker)
    result = await retrieve(library("rerank.enabled=true", f"rerank.base_url={reranker.url}", "rerank.model=m",
                                    "rerank.timeout=0.5"))
    assert sources(result) == sources(fused)
    assert [h.score for h in result.hits] == [h.score for h in fused.hits]
    assert all(h.rerank_score is None for h in result.hits)
    assert len(result.notices) == 1 and reranker.url in result.notices[0] and "fused order stands" in result.notices[0]
    assert result.meta.rerank is not None and result.meta.rerank.error


async def test_an_unreachable_reranker_keeps_the_fused_order(library: Callable[..., Settings]) -> None:
    gone = FakeRerank().start()
    url = gone.url
    gone.stop()
    fused = await retrieve(library())
    result = await retrieve(library("rerank.enabled=true", f"rerank.base_url={url}", "rerank.model=m"))
    assert sources(result) == sources(fused)
    assert len(result.notices) == 1 and url in result.notices[0]


def test_enabled_without_a_server_is_a_config_error(make_settings: Callable[..., Settings]) -> None:
    with pytest.raises(ConfigError, match=r"rerank\.base_url"):
        make_settings("rerank.enabled=true")


async def test_a_reopened_session_keeps_each_source_s_rerank_score(
        library: Callable[..., Settings], reranker: FakeRerank) -> None:
    settings = library("rerank.enabled=true", f"rerank.base_url={reranker.url}", "rerank.model=m",
                       "annotation.enabled=false")
    async with Workspace(settings) as workspace:
        session = workspace.new_session(QUERY, ["lib"])
        _ = [e async for e in session.run()]
        await session.aclose()
    scores = [s.rerank_score for s in session.sources]
    assert scores and None not in scores
    loaded = HistoryStore(settings.data_dir).load(session.id)
    assert [s.rerank_score for s in loaded.all_sources] == scores
    assert ("rerank", 1) in [(e.leg, e.rank) for e in loaded.all_sources[0].evidence]
