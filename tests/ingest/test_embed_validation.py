"""Embedding answers are validated before anything is stored: each fault is one line naming the model and
the host, the batch stores nothing, and the collection stays resumable ("needs embeddings")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.library import CollectionRegistry
from ragtui.workspace import Workspace
from tests.fake_ollama import FakeOllama, hashed_embedding
from tests.ingest.conftest import SMALL, ingest

PROSE = "The float valve refills the tank after each flush of the toilet. " * 6


def good(texts: list[str], dim: int) -> list[list[float]]:
    return [hashed_embedding(t, dim) for t in texts]


def body(vectors: object) -> bytes:
    return json.dumps({"model": "nomic-embed-text", "embeddings": vectors}).encode()


FAULTS: dict[str, Callable[[list[str], int], bytes]] = {
    "not JSON": lambda texts, dim: b"<html>502 Bad Gateway</html>",
    "truncated JSON": lambda texts, dim: body(good(texts, dim))[:40],
    "null embeddings": lambda texts, dim: body(None),
    "null vector": lambda texts, dim: body([None] * len(texts)),
    "string vectors": lambda texts, dim: body([["x"] * dim for _ in texts]),
    "string for a vector": lambda texts, dim: body(["vector"] * len(texts)),
    "NaN": lambda texts, dim: body([[float("nan")] * dim for _ in texts]),
    "infinity": lambda texts, dim: body([[float("inf"), *v[1:]] for v in good(texts, dim)]),
    "all zeros": lambda texts, dim: body([[0.0] * dim for _ in texts]),
    "mixed dimensions": lambda texts, dim: body([v if i == 0 else v[:-1] for i, v in enumerate(good(texts, dim))]),
    "wrong count": lambda texts, dim: body(good(texts, dim)[:-1]),
    "values near 1e308": lambda texts, dim: body([[1e308] * dim for _ in texts]),   # finite, but |v| overflows
    "another dimension than the model's": lambda texts, dim: body(good(texts, 17)),
}


def vector_count(settings: Settings, name: str = "c") -> int:
    coll = CollectionRegistry(settings).open(name)
    try:
        with coll.vector_access():
            return coll.vectors("nomic-embed-text").count()
    finally:
        coll.close()


def state(settings: Settings, name: str = "c") -> str:
    coll = CollectionRegistry(settings).open(name)
    try:
        return str(coll.manifest.get("state"))
    finally:
        coll.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text(PROSE)
    (root / "b.txt").write_text(PROSE.replace("valve", "flapper"))
    return root


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_bad_embedding_answer_stores_nothing_and_resumes(settings: Settings, folder: Path,
                                                           fake_ollama: FakeOllama, fault: str) -> None:
    fake_ollama.embed_body = FAULTS[fault]
    (folder / "c.txt").write_text(PROSE.replace("valve", "chain"))   # more than one chunk in the batch
    report = ingest(settings, [folder])
    [warning] = report.warnings
    assert "\n" not in warning and len(warning) < 400
    assert "'nomic-embed-text'" in warning and fake_ollama.url in warning
    assert "unusable batch" in warning
    assert vector_count(settings) == 0
    assert state(settings) == "needs embeddings"
    assert len(fake_ollama.calls("/api/embed")) == 1           # not retried: the answer was wrong, not missing
    fake_ollama.embed_body = None
    again = ingest(settings, [folder])
    assert again.warnings == [] and not again.needs_embedding
    assert vector_count(settings) > 0 and state(settings) == "ready"


def test_vectors_of_another_dimension_than_the_collection_are_refused(settings: Settings, folder: Path,
                                                                      fake_ollama: FakeOllama) -> None:
    ingest(settings, [folder])
    stored = vector_count(settings)
    (folder / "c.txt").write_text(PROSE.replace("valve", "chain"))
    fake_ollama.embed_body = lambda texts, dim: body(good(texts, 32))      # the model now answers in 32-d
    report = ingest(settings, [folder])
    [warning] = report.warnings
    assert "has 32 dimensions; the collection's index has 64" in warning and fake_ollama.url in warning
    assert vector_count(settings) == stored and state(settings) == "needs embeddings"
    fake_ollama.embed_body = None
    fake_ollama.embed_body = None
    assert ingest(settings, [folder]).warnings == []
    assert vector_count(settings) > stored


def test_a_query_embedding_of_the_wrong_dimension_answers_keyword_only(settings: Settings, folder: Path,
                                                                       fake_ollama: FakeOllama) -> None:
    ingest(settings, [folder])
    fake_ollama.embed_body = lambda texts, dim: body(good(texts, 32))

    async def run() -> object:
        async with Workspace(settings) as workspace:
            return await workspace.retrieve("flapper", ["c"])

    result = asyncio.run(run())
    assert result.keyword_only and result.hits  # type: ignore[attr-defined]
    assert any("32 dimensions" in n and "keyword matches only" in n for n in result.notices)  # type: ignore[attr-defined]


def test_a_slow_drip_hits_the_overall_deadline(make_settings: Callable[..., Settings], folder: Path,
                                               fake_ollama: FakeOllama) -> None:
    settings = make_settings(*SMALL, "ollama.timeout=1", "embed.retries=1")
    fake_ollama.embed_drip_s = 0.05            # a byte every 50 ms: no single read ever waits a second
    report = ingest(settings, [folder])
    [warning] = report.warnings
    assert "ollama.timeout" in warning and fake_ollama.url in warning
    assert state(settings) == "needs embeddings"


def test_a_new_collection_refuses_vectors_of_another_dimension_than_the_model_gives(
        settings: Settings, folder: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.embed_body = lambda texts, dim: body(good(texts, 17))     # /api/show says 64
    report = ingest(settings, [folder])
    [warning] = report.warnings
    assert "vector 1 has 17 dimensions; model 'nomic-embed-text' has 64" in warning
    assert vector_count(settings) == 0 and state(settings) == "needs embeddings"


def test_without_a_dimension_from_api_show_one_probe_embedding_gives_it(
        settings: Settings, folder: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.models["nomic-embed-text"].shows_dim = False
    # The model answers the probe in 64 dimensions, then a batch in 17: the batch is refused.
    fake_ollama.embed_body = lambda texts, dim: None if texts == ["dimension probe"] else body(good(texts, 17))
    [warning] = ingest(settings, [folder]).warnings
    assert "vector 1 has 17 dimensions; model 'nomic-embed-text' has 64" in warning
    assert vector_count(settings) == 0
    assert fake_ollama.calls("/api/embed")[0].body["input"] == ["dimension probe"]
    fake_ollama.embed_body = None
    assert ingest(settings, [folder]).warnings == [] and vector_count(settings) > 0
