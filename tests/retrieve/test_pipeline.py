"""Hybrid retrieval end to end: real Whoosh and Chroma in tmp dirs, embeddings from the fake Ollama over HTTP."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.model.retrieval import Retrieval
from ragtui.workspace import Workspace
from tests.collection_builder import build_collection

FILLER = ("The garden beds were mulched in spring and the tomatoes staked against the wind. " * 40).strip()
BURIED = FILLER + " A single zeolite cartridge sat in the shed. " + FILLER

NOTES = {
    "filters.txt": ["Water filtration removes sediment; filtration cartridge needs replacing.",
                    "Sand filtration and carbon filtration compared for water."],
    "pumps.txt": ["Pump filtration systems move water through a filtration stage."],
    "printer.txt": ["Replace the ink cartridge when the cartridge light blinks."],
    "pens.txt": ["A fountain pen takes a cartridge or a converter."],
    "garden.txt": [BURIED],
    "bath.txt": ["The lavatory cistern refills after each use."],
    "kitchen.txt": ["Sharpen the knives weekly and oil the wooden boards."],
}


async def retrieve(settings: Settings, query: str, names: Sequence[str], **kw: Any) -> Retrieval:
    """One query through a workspace of its own."""
    async with Workspace(settings) as workspace:
        return await workspace.retrieve(query, names, **kw)


@pytest.fixture
def notes(make_settings: Callable[..., Settings]) -> Settings:
    settings = make_settings("retrieve.top_k=3", "retrieve.max_chunks_per_file=2", "retrieve.fusion=boost")
    build_collection(settings, "notes", NOTES)
    return settings


async def test_buried_keyword_match_is_rescued_by_the_keyword_leg(notes: Settings) -> None:
    vector = await retrieve(notes, "zeolite cartridge", ["notes"], mode="vector")
    assert len(vector.hits) == 3 and "garden.txt" not in [h.chunk.meta.source for h in vector.hits]

    hybrid = await retrieve(notes, "zeolite cartridge", ["notes"])
    garden = [h for h in hybrid.hits if h.chunk.meta.source == "garden.txt"]
    assert garden and garden[0].legs == ("keyword",)
    assert garden[0].score == pytest.approx(0.15)          # keyword only: the keyword_weight floor (RAGWeed 3d)
    meta = hybrid.meta.collections["notes"]
    assert meta.keyword.tier == 2 and meta.keyword.and_hits == 1
    assert meta.hits.vector == 3
    assert hybrid.hits[0].rel_score == 1.0 and hybrid.hits[-1].rel_score == 0.0
    assert not hybrid.keyword_only and hybrid.notices == []


async def test_synonym_only_match_needs_expansion(make_settings: Callable[..., Settings],
                                                  wordnet_settings: Settings) -> None:
    build_collection(wordnet_settings, "notes", NOTES)
    without = await retrieve(wordnet_settings, "toilet", ["notes"], mode="keyword", synonyms=False)
    assert without.hits == []
    assert any("Nothing found" in n or "No keyword match" in n for n in without.notices)

    with_syn = await retrieve(wordnet_settings, "toilet", ["notes"], mode="keyword", synonyms=True)
    assert [h.chunk.meta.source for h in with_syn.hits] == ["bath.txt"]
    kw = with_syn.meta.collections["notes"].keyword
    assert kw.tier == 2 and "lavatory" in kw.synonyms["toilet"]
    assert kw.synonym_budget == {"toilet": 5}          # df = 0: the full budget


async def test_unreachable_embedder_falls_back_to_keywords_and_says_so(
        notes: Settings, make_settings: Callable[..., Settings]) -> None:
    down = notes.replace(ollama__host="http://127.0.0.1:9")
    result = await retrieve(down, "filtration cartridges", ["notes"])
    assert result.keyword_only
    assert result.hits and all(h.legs == ("keyword",) for h in result.hits)
    assert any("127.0.0.1:9" in n for n in result.notices)
    assert not any("no embeddings yet" in n for n in result.notices)  # its vectors exist; the query's failed


async def test_collection_without_embeddings_answers_keyword_only(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    build_collection(settings, "raw", NOTES, models=[])
    result = await retrieve(settings, "filtration", ["raw"])
    assert result.keyword_only and result.hits
    assert any("raw has no embeddings yet" in n for n in result.notices)


async def test_stop_word_query_skips_the_keyword_leg(notes: Settings) -> None:
    result = await retrieve(notes, "the and of", ["notes"], mode="keyword")
    assert result.hits == []
    kw = result.meta.collections["notes"].keyword
    assert kw.tier == "skipped" and not kw.gate_passed
    assert kw.reason == "low information (mean IDF below keyword.min_query_ic)"     # the setting as it is named


async def test_and_tier_suffices_with_three_hits_and_rrf_merges(notes: Settings) -> None:
    rrf = notes.replace(retrieve__fusion="rrf", retrieve__rrf_k=60, retrieve__top_k=10)
    result = await retrieve(rrf, "water filtration", ["notes"])
    kw = result.meta.collections["notes"].keyword
    assert kw.tier == 1 and kw.hits == 3
    top = result.hits[0]
    assert set(top.legs) == {"vector", "keyword"}
    assert top.score == pytest.approx(1 / 61, rel=0.05)   # ranked first or second in both legs: the mean of 1/61


async def test_several_collections_and_models_are_pooled(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings("embed.extra_models=all-minilm", "retrieve.top_k=5")
    build_collection(settings, "a", {"x.txt": ["Turbine blade cooling by film injection."]})
    build_collection(settings, "b", {"x.txt": ["Turbine blade erosion in sandy air."]})
    result = await retrieve(settings, "turbine blade", ["a", "b"])
    assert sorted(h.chunk.meta.collection for h in result.hits) == ["a", "b"]
    vector = result.meta.collections["a"].vector
    assert vector is not None and vector.models == ("nomic-embed-text", "all-minilm")


RIGHT_PAGE = "Cartridge filtration of raw sewage: replace the cartridge when the flow drops."
OTHER_PAGES = ["Paint drying on a cold wall.", "Roof tiles slipped in the storm.", "The boiler service is due in May.",
               "Oak floors take two coats of oil.", "Gutters were cleared of leaves."]


@pytest.mark.parametrize("fusion", ["rrf", "norm"])
async def test_a_keyword_only_collections_best_hit_competes_with_a_collection_that_has_both_legs(
        make_settings: Callable[..., Settings], fusion: str) -> None:
    """Both legs answer for `embedded`, only the keyword leg for `raw` (no vectors): each collection's fused
    scores are a mean over the legs that answered for it, so raw's best keyword hit scores as a chunk first in
    both legs, not as a chunk half of whose legs missed it."""
    settings = make_settings(f"retrieve.fusion={fusion}", "retrieve.rrf_k=60", "retrieve.top_k=10")
    build_collection(settings, "embedded", NOTES)
    build_collection(settings, "raw", {"r.txt": [RIGHT_PAGE], "o.txt": OTHER_PAGES}, models=[])
    result = await retrieve(settings, "filtration cartridge", ["embedded", "raw"])
    assert not result.keyword_only
    sources = [(h.chunk.meta.collection, h.chunk.meta.source) for h in result.hits]
    right = sources.index(("raw", "r.txt"))
    assert right <= 1, sources                    # first, or tied with embedded's best (pooled in collection order)
    hit = result.hits[right]
    assert hit.legs == ("keyword",)
    assert hit.score == pytest.approx(1 / 61 if fusion == "rrf" else 1.0)   # first of its one leg: the mean's best
    assert all(h.score <= hit.score + 1e-12 for h in result.hits)
    assert any("raw has no embeddings yet" in n for n in result.notices)


async def test_a_keyword_leg_that_found_nothing_answered_one_its_gate_skipped_did_not(
        make_settings: Callable[..., Settings]) -> None:
    """`tiny`: both query words are in every chunk, so the keyword leg's information gate skips the query there
    and its vector hits are a mean over the one leg that answered. `unrelated`: the keyword leg ran and matched
    nothing, which is evidence: its vector hits are a mean over two legs."""
    settings = make_settings("retrieve.fusion=rrf", "retrieve.rrf_k=60", "retrieve.top_k=10",
                             "retrieve.min_similarity=0")
    build_collection(settings, "embedded", NOTES)
    build_collection(settings, "tiny", {"t.txt": ["Filtration cartridge basics.", "Cartridge filtration notes."]})
    build_collection(settings, "unrelated", {"o.txt": OTHER_PAGES})
    result = await retrieve(settings, "filtration cartridge", ["embedded", "tiny", "unrelated"])
    tiers = {name: meta.keyword.tier for name, meta in result.meta.collections.items()}
    assert tiers["tiny"] == "skipped" and tiers["unrelated"] == 2 and tiers["embedded"] in (1, 2)
    best = {name: next(h for h in result.hits if h.chunk.meta.collection == name) for name in ("tiny", "unrelated")}
    assert best["tiny"].legs == ("vector",) and best["tiny"].score == pytest.approx(1 / 61)
    assert best["unrelated"].legs == ("vector",) and best["unrelated"].score == pytest.approx(1 / 61 / 2)


async def test_the_keyword_only_collections_hit_ranks_where_it_would_with_its_vectors(
        make_settings: Callable[..., Settings]) -> None:
    """The right page sits in a collection whose vectors are not made yet: it ranks as high as when the same
    page's collection has its vectors (here: first), not behind the other collection's two-leg chunks."""
    settings = make_settings("retrieve.fusion=rrf", "retrieve.rrf_k=60", "retrieve.top_k=10")
    build_collection(settings, "embedded", NOTES)
    build_collection(settings, "raw", {"r.txt": [RIGHT_PAGE], "o.txt": OTHER_PAGES}, models=[])
    build_collection(settings, "vectors", {"r.txt": [RIGHT_PAGE], "o.txt": OTHER_PAGES})
    rank = {}
    for name in ("raw", "vectors"):
        result = await retrieve(settings, "cartridge filtration sewage", [name, "embedded"])
        rank[name] = [(h.chunk.meta.collection, h.chunk.meta.source) for h in result.hits].index((name, "r.txt"))
    assert rank == {"raw": 0, "vectors": 0}


async def test_a_collection_recreated_under_its_name_is_reopened_and_the_old_one_closed(
        make_settings: Callable[..., Settings]) -> None:
    from ragtui.library import CollectionRegistry

    settings = make_settings()
    build_collection(settings, "c", {"old.txt": ["Turbine blades crack under heat."]})
    async with Workspace(settings) as workspace:
        assert [h.chunk.meta.source for h in (await workspace.retrieve("turbine", ["c"])).hits] == ["old.txt"]
        old = workspace.collection("c")
        CollectionRegistry(settings).delete("c")       # behind the workspace's back, as another process would
        build_collection(settings, "c", {"new.txt": ["Turbine blades are cooled by film injection."]})  # same second
        assert [h.chunk.meta.source for h in (await workspace.retrieve("turbine", ["c"])).hits] == ["new.txt"]
        assert workspace.collection("c") is not old
        assert old.keyword._searcher is None      # closed, not leaked
