"""retrieval_meta as frozen dataclasses: the JSON `query --json`, `ask --json` and history have always written."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.model.retrieval import CollectionMeta, KeywordMeta, RetrievalMeta
from tests.collection_builder import build_collection
from tests.retrieve.test_pipeline import NOTES, retrieve

# Captured from `ragtui query --json` before retrieval_meta had types: two collections (one without
# embeddings, its keyword leg skipped), a keyword-only query with synonyms, and vector mode; the skipped leg's
# reason names its setting as it is spelled now (keyword.min_query_ic, once fts.min_query_ic).
HYBRID = (
    '{"mode": "hybrid", "collections": {"notes": {"timings_ms": {"vector:nomic-embed-text": 41.75, '
    '"vector:all-minilm": 7.59, "keyword": {"plan": 4.21, "and": 0.37, "or": 10.26}, "merge": 0.02}, '
    '"vector": {"models": ["nomic-embed-text", "all-minilm"], "vectors": {"nomic-embed-text": 8, "all-minilm": 8}, '
    '"chunks": 8}, "keyword": {"words": ["turbine", "blade", "water"], "idf": {"turbine": 2.1972, "blade": 2.1972, '
    '"water": 0.8109}, "mean_idf": 1.7351, "gate_passed": true, "kept": ["turbine", "blade", "water"], '
    '"dropped": [], "synonym_budget": {"turbine": 0, "blade": 0, "water": 0}, "tier": 2, "synonyms": {}, '
    '"hits": 3, "timings_ms": {"plan": 4.21, "and": 0.37, "or": 10.26}, "and_hits": 0}, "hits": {"vector": 8, '
    '"keyword": 3, "both": 3, "merged": 8}, "fusion": "rrf"}, "b": {"timings_ms": {"keyword": {"plan": 11.06}, '
    '"merge": 0.0}, "vector": {"models": [], "vectors": {}, "chunks": 1}, "keyword": {"words": ["turbine", '
    '"blade", "water"], "idf": {"turbine": 0.0, "blade": 0.0, "water": 0.6931}, "mean_idf": 0.231, '
    '"gate_passed": false, "kept": [], "dropped": ["turbine", "blade", "water"], "synonym_budget": {}, '
    '"tier": "skipped", "synonyms": {}, "hits": 0, "timings_ms": {"plan": 11.06}, "reason": "low information '
    '(mean IDF below keyword.min_query_ic)"}, "hits": {"vector": 0, "keyword": 0, "both": 0, "merged": 0}, '
    '"fusion": "single leg"}}, "timings_ms": {"embed": {"nomic-embed-text": 68.0, "all-minilm": 44.68}, '
    '"legs_and_merge": 138.62, "postprocess": 0.4}, "returned": 8}')
KEYWORD = (
    '{"mode": "keyword", "collections": {"notes": {"timings_ms": {"keyword": {"plan": 0.62, "and": 0.1, '
    '"synonyms": 1.05, "or": 0.74}, "merge": 0.01}, "keyword": {"words": ["toilet"], "idf": {"toilet": 2.1972}, '
    '"mean_idf": 2.1972, "gate_passed": true, "kept": ["toilet"], "dropped": [], "synonym_budget": {"toilet": 5}, '
    '"tier": 2, "synonyms": {"toilet": ["lavatory", "lav", "john", "privy", "bathroom"]}, "hits": 1, '
    '"timings_ms": {"plan": 0.62, "and": 0.1, "synonyms": 1.05, "or": 0.74}, "and_hits": 0}, "hits": '
    '{"vector": 0, "keyword": 1, "both": 0, "merged": 1}, "fusion": "single leg"}}, "timings_ms": {"embed": {}, '
    '"legs_and_merge": 5.83, "postprocess": 0.29}, "returned": 1}')
VECTOR = (
    '{"mode": "vector", "collections": {"notes": {"timings_ms": {"vector:nomic-embed-text": 24.67, '
    '"vector:all-minilm": 12.27, "merge": 0.02}, "vector": {"models": ["nomic-embed-text", "all-minilm"], '
    '"vectors": {"nomic-embed-text": 8, "all-minilm": 8}, "chunks": 8}, "keyword": {"tier": "off"}, "hits": '
    '{"vector": 8, "keyword": 0, "both": 0, "merged": 8}, "fusion": "single leg"}}, "timings_ms": {"embed": '
    '{"all-minilm": 46.22, "nomic-embed-text": 80.03}, "legs_and_merge": 120.65, "postprocess": 0.35}, '
    '"returned": 8}')


@pytest.mark.parametrize("text", [HYBRID, KEYWORD, VECTOR], ids=["hybrid", "keyword", "vector"])
def test_json_round_trip_is_byte_identical(text: str) -> None:
    meta = RetrievalMeta.from_json(json.loads(text))
    assert json.dumps(meta.to_json()) == text
    assert RetrievalMeta.from_json(meta.to_json()) == meta


def test_typed_fields_read_what_the_json_says() -> None:
    meta = RetrievalMeta.from_json(json.loads(HYBRID))
    notes, b = meta.collections["notes"], meta.collections["b"]
    assert meta.mode == "hybrid" and meta.returned == 8 and meta.embed_ms["all-minilm"] == 44.68
    assert notes.keyword.tier == 2 and notes.keyword.and_hits == 0 and notes.vector_ms["all-minilm"] == 7.59
    assert b.keyword.tier == "skipped" and b.keyword.reason.startswith("low information") and b.vector is not None
    assert RetrievalMeta.from_json(json.loads(VECTOR)).collections["notes"].keyword == KeywordMeta()


def test_older_or_partial_records_still_open() -> None:
    assert RetrievalMeta.from_json({}) == RetrievalMeta()
    assert RetrievalMeta.from_json({"collections": {"docs": {"keyword": {"tier": 1}}}}).collections == \
        {"docs": CollectionMeta(keyword=KeywordMeta(tier=1))}


def _shape(data: Any, timing: bool = False) -> Any:
    """The JSON with timings zeroed and the embed timings (they arrive in completion order) sorted."""
    if isinstance(data, dict):
        items = sorted(data.items()) if timing and "nomic-embed-text" in data else data.items()
        return [(k, _shape(v, timing or k.startswith("timings"))) for k, v in items]
    if isinstance(data, list):
        return [_shape(v, timing) for v in data]
    return 0 if timing else data


async def test_a_live_retrieval_writes_the_same_shape(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings("embed.extra_models=all-minilm", "retrieve.min_similarity=0")
    build_collection(settings, "notes", NOTES)
    build_collection(settings, "b", {"x.txt": ["Turbine blade erosion in sandy air."]}, models=[])
    result = await retrieve(settings, "turbine blade water", ["notes", "b"])
    assert _shape(result.meta.to_json()) == _shape(json.loads(HYBRID))
