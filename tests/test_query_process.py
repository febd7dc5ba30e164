"""The query process at scale (issue 14): what opening a collection costs in memory, what a query re-reads.

Real Whoosh and Chroma in tmp dirs, query vectors from the fake Ollama over HTTP.
"""

from __future__ import annotations

import asyncio
import random
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.library import CollectionError
from ragtui.retrieve.hybrid_retriever import HybridRetriever, QueryEmbeddings, embed_query
from ragtui.stores.keyword import KeywordIndex
from ragtui.workspace import Workspace
from tests.collection_builder import build_collection, index_chunks, make_chunks

WORDS = [f"w{i:04d}" for i in range(3000)]
NOTES = {"filters.txt": ["Water filtration removes sediment; filtration cartridge needs replacing.",
                         "Sand filtration and carbon filtration compared for water."],
         "pumps.txt": ["Pump filtration systems move water through a filtration stage."],
         "printer.txt": ["Replace the ink cartridge when the cartridge light blinks."],
         "pens.txt": ["A fountain pen takes a cartridge or a converter."],
         "bath.txt": ["The lavatory cistern refills after each use."],
         "kitchen.txt": ["Sharpen the knives weekly and oil the wooden boards."]}


def test_opening_a_searcher_copies_no_segment_file_into_memory(tmp_path: Path) -> None:
    """Whoosh on mmap copies each file of a compound segment into a BytesIO when a reader opens it (the
    postings, then the stored fields on the first hit): at 110k chunks that was ~700 MB of a query process."""
    rng = random.Random(1)
    texts = [" ".join(rng.choices(WORDS, k=300)) for _ in range(600)]
    writer = KeywordIndex(tmp_path / "ix")
    index_chunks(writer, make_chunks("c", {"a.txt": texts}))
    writer.close()
    segment = sum(f.stat().st_size for f in (tmp_path / "ix").glob("*.seg"))
    assert segment > 2_000_000                            # one compound segment of a few MB

    reader = KeywordIndex(tmp_path / "ix")
    import ragtui.stores.postings  # noqa: F401  # numpy's import is not what is measured
    tracemalloc.start()
    try:
        reader.prepare()
        assert len(reader.get([make_chunks("c", {"a.txt": texts})[7].id])) == 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        reader.close()
    assert peak < segment / 4, f"opening the index took {peak:,} bytes for a {segment:,}-byte segment"


async def test_a_query_opens_the_stores_while_its_vector_is_embedded(make_settings: Callable[..., Settings]) -> None:
    """The first query's cold loads (Whoosh searcher and segment arrays, Chroma's HNSW index) overlap the
    embedding call instead of following it: the embedder below answers only once the keyword index is open."""
    settings = make_settings()
    build_collection(settings, "notes", NOTES)
    with Workspace(settings) as workspace:
        collection = workspace.collection("notes")
        assert not collection.keyword.cached_segments()

        async def embed_once_opened(s: Settings, query: str, models: Sequence[str]) -> QueryEmbeddings:
            deadline = time.monotonic() + 20
            while not collection.keyword.cached_segments():
                assert time.monotonic() < deadline, "the stores were not opened during the embedding"
                await asyncio.sleep(0.01)
            return await embed_query(s, query, models)

        retriever = HybridRetriever(settings, [collection], lexicon=workspace.lexicon, embed=embed_once_opened)
        nodes = await retriever.aretrieve("filtration cartridge")
        assert nodes and not retriever.keyword_only
        assert retriever.meta.collections["notes"].hits.both >= 1


async def test_vector_counts_follow_another_writers_commits(make_settings: Callable[..., Settings]) -> None:
    """A query no longer asks Chroma for the count and dimension every time; what it keeps is dropped when the
    collection's generation moves on, here a write through another workspace's handle in this process (whose
    Chroma system is shared, so only the generation tells)."""
    settings = make_settings()
    build_collection(settings, "notes", NOTES)
    model = settings.embed.model
    more = make_chunks("notes", {"extra.txt": ["Filtration beds of sand.", "Cartridge filtration at home."]})
    with Workspace(settings) as reader, Workspace(settings) as writer:
        first = await reader.retrieve("filtration cartridge", ["notes"])
        vector = first.meta.collections["notes"].vector
        assert vector is not None and vector.vectors == {model: 7} and vector.chunks == 7

        target = writer.collection("notes")
        index_chunks(target.keyword, more)
        embedded = await embed_query(settings, "unused", [model])
        assert embedded.vectors
        with target.vector_access(write=True):
            target.vectors(model).add(more, [embedded.vectors[model]] * len(more))

        again = await reader.retrieve("filtration cartridge", ["notes"])
        vector = again.meta.collections["notes"].vector
        assert vector is not None and vector.vectors == {model: 9} and vector.chunks == 9
        assert not any("have no" in n for n in again.notices)


def test_workspace_prepare_opens_each_collections_stores(make_settings: Callable[..., Settings]) -> None:
    """What the TUI runs for the active collections after its warm-up: the keyword index's segment arrays
    and the vector indexes are open before any query; a collection without vectors has only the first."""
    settings = make_settings()
    build_collection(settings, "notes", NOTES)
    build_collection(settings, "raw", {"r.txt": ["Filtration of raw sewage."]}, models=[])
    with Workspace(settings) as workspace:
        workspace.prepare(["notes", "raw"])
        notes, raw = workspace.collection("notes"), workspace.collection("raw")
        assert notes.keyword.cached_segments() and raw.keyword.cached_segments()
        with notes.vector_access():
            assert notes.vectors(settings.embed.model).count() == 7
        with pytest.raises(CollectionError):
            workspace.prepare(["missing"])
