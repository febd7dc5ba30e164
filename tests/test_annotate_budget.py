"""How much gets annotated: retrieve.annotate_max caps the sources, retrieve.min_similarity leaves out
vector-only matches too far from the query (keyword matches are judged by the keyword leg), and a
nonsense question says "nothing relevant" instead of annotating noise. Real stores, fake Ollama."""

from __future__ import annotations

from collections.abc import Callable

from ragtui.config import Settings
from ragtui.events import AnnotationStarted, Notice
from ragtui.retrieve.result import Retrieval
from ragtui.workspace import Workspace
from tests.collection_builder import build_collection
from tests.fake_ollama import FakeOllama
from tests.retrieve.test_pipeline import NOTES

PUMPS = {f"pump{i:02}.txt": [f"Pump model {i} moves water through the filtration stage at {i} bar."]
         for i in range(30)}


async def retrieve(settings: Settings, query: str, **kw: object) -> Retrieval:
    async with Workspace(settings) as workspace:
        return await workspace.retrieve(query, ["notes"], **kw)   # type: ignore[arg-type]


async def test_a_nonsense_query_finds_nothing_relevant(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    build_collection(settings, "notes", NOTES)
    unfloored = await retrieve(settings.replace(retrieve__min_similarity=0.0), "zxqv blorf")
    assert unfloored.hits and all(h.legs == ("vector",) for h in unfloored.hits)   # noise, without the floor

    result = await retrieve(settings, "zxqv blorf")
    assert result.hits == []
    assert result.meta.below_min_similarity == len(unfloored.hits)
    assert result.meta.to_json()["below_min_similarity"] == len(unfloored.hits)
    assert len(result.notices) == 1 and result.notices[0].startswith("Nothing relevant in notes")
    assert "retrieve.min_similarity = 0.25" in result.notices[0]


async def test_a_keyword_match_passes_the_floor_that_vector_only_matches_do_not(
        make_settings: Callable[..., Settings]) -> None:
    settings = make_settings("retrieve.min_similarity=0.99")
    build_collection(settings, "notes", NOTES)
    result = await retrieve(settings, "zeolite cartridge")
    assert result.hits and all("keyword" in h.legs for h in result.hits)
    assert "garden.txt" in [h.chunk.meta.source for h in result.hits]   # found by one rare word, far by vector
    assert result.meta.below_min_similarity > 0
    vector_only = await retrieve(settings, "zeolite cartridge", mode="vector")
    assert vector_only.hits == [] and vector_only.notices[0].startswith("Nothing relevant")


async def test_annotate_max_caps_what_is_annotated(make_settings: Callable[..., Settings],
                                                   fake_ollama: FakeOllama) -> None:
    settings = make_settings("retrieve.annotate_max=5", "retrieve.min_similarity=0")
    build_collection(settings, "notes", PUMPS)
    uncapped = await retrieve(settings.replace(retrieve__annotate_max=100), "pump water filtration")
    assert len(uncapped.hits) == 30

    async with Workspace(settings) as workspace:
        session = workspace.new_session("pump water filtration", ["notes"])
        events = [e async for e in session.run()]
        await session.aclose()
    assert [s.chunk.id for s in session.sources] == [h.chunk.id for h in uncapped.hits[:5]]
    assert sum(isinstance(e, AnnotationStarted) for e in events) == 5
    annotations = [c for c in fake_ollama.calls("/api/chat") if "EXTRACT" in c.body["messages"][-1]["content"]]
    assert len(annotations) == 5
    assert not [e for e in events if isinstance(e, Notice) and "Nothing relevant" in e.message]
