"""Sentence-window retrieval ([strategies] sentence_window): the sentence index the ingest keeps, the window a
sentence hit returns and the chunk it is cited as; real ingest, Whoosh and Chroma, embeddings from the fake
Ollama server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.ingest.sentences import file_sentences
from ragtui.library import CollectionRegistry
from ragtui.model.chunks import Chunk, ChunkMeta, chunk_id, sentence_id
from ragtui.model.retrieval import Retrieval
from ragtui.retrieve.sentence_window import window_chunk
from ragtui.workspace import Workspace

WORDS = ["aardvark", "bison", "cheetah", "dingo", "emu", "ferret", "gecko", "heron", "ibis", "jackal", "koala",
         "lemur"]
# Twelve sentences, one animal each; with 40-token chunks the file is several chunks.
ZOO = " ".join(f"The keeper fed the {w} at the enclosure number {i} today." for i, w in enumerate(WORDS))


def sentence(i: int) -> str:
    return f"The keeper fed the {WORDS[i]} at the enclosure number {i} today."


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    return lambda *o: make_settings("chunk.size_tokens=40", "chunk.overlap_pct=0", "retrieve.min_similarity=0",
                                    *o)


def ingest(settings: Settings, docs: list[tuple[str, str]], name: str = "zoo") -> None:
    async def run() -> None:
        async with Workspace(settings) as workspace:
            async for _ in workspace.ingest_documents(name, docs):
                pass

    asyncio.run(run())


def sync_folder(settings: Settings, folder: Path, name: str = "zoo") -> None:
    async def run() -> None:
        async with Workspace(settings) as workspace:
            async for _ in workspace.ingest([folder], name, sync=True):
                pass

    asyncio.run(run())


def retrieve(settings: Settings, query: str, name: str = "zoo", **kw: Any) -> Retrieval:
    async def run() -> Retrieval:
        async with Workspace(settings) as workspace:
            return await workspace.retrieve(query, [name], **kw)

    return asyncio.run(run())


def sentence_texts(settings: Settings, name: str = "zoo") -> dict[str, str]:
    """The sentence index's (id -> text)."""
    coll = CollectionRegistry(settings).open(name)
    try:
        index = coll.sentences
        return {c.id: c.text for c in index.get(sorted(index.ids()))}
    finally:
        coll.close()


def test_a_hit_in_one_sentence_returns_its_window_as_the_chunk_holding_it(
        settings: Callable[..., Settings]) -> None:
    s = settings("strategies.sentence_window=1")
    ingest(s, [("zoo.txt", ZOO)])
    found = retrieve(s, "heron", mode="keyword")
    assert found.meta.strategies is not None and found.meta.strategies.strategies == ("sentence-window",)
    assert found.meta.strategies.searches == 2
    windows = [h for h in found.hits if any(e.leg == "sentences" for e in h.evidence)]
    assert len(windows) == 1
    hit = windows[0]
    coll = CollectionRegistry(s).open("zoo")
    try:
        chunks = coll.records.chunks_of(["zoo.txt"])
    finally:
        coll.close()
    holder = next(c for c in chunks if "heron" in c.text)
    assert hit.chunk.id == holder.id and hit.chunk.meta.chunk_index == holder.meta.chunk_index
    # the chunk search found the same chunk: the typed run's hit (its whole text) is the one kept
    assert hit.chunk.text == holder.text


def test_a_sentence_hit_is_its_window_at_the_file_s_edges_too(
        settings: Callable[..., Settings]) -> None:
    s = settings("strategies.sentence_window=1")
    ingest(s, [("zoo.txt", ZOO)])
    from ragtui.retrieve.sentence_window import sentence_search

    coll = CollectionRegistry(s).open("zoo")
    try:
        found = sentence_search(s, "heron", [coll], top_k=5)
        edge = sentence_search(s, "aardvark", [coll], top_k=5)
        last = sentence_search(s, "lemur", [coll], top_k=5)
        wide = sentence_search(s.replace(strategies__sentence_window=3), "heron", [coll], top_k=5)
        text = coll.records.document("zoo.txt")
    finally:
        coll.close()
    assert [h.chunk.text for h in found.hits] == [" ".join(sentence(i) for i in (6, 7, 8))]
    assert [h.chunk.text for h in edge.hits] == [" ".join(sentence(i) for i in (0, 1))]       # start of the file
    assert [h.chunk.text for h in last.hits] == [" ".join(sentence(i) for i in (10, 11))]     # end of the file
    assert [h.chunk.text for h in wide.hits] == [" ".join(sentence(i) for i in range(4, 11))]
    hit = found.hits[0].chunk
    assert text is not None and text[0][hit.meta.char_start:hit.meta.char_end].rstrip() == hit.text
    assert found.hits[0].legs == ("keyword",) and found.notices == []


def test_sentences_map_to_the_chunk_and_page_that_hold_them() -> None:
    text = "First page opens here. It ends now. Second page starts. Second page ends."
    second = text.index("Second")
    meta = ChunkMeta(collection="c", source="m.pdf", file_hash="h", format="pdf", chunk_index=0, char_start=0,
                     char_end=second, page="i", page_index=0)
    chunks = [Chunk(chunk_id("m.pdf", 0), text[:second], meta),
              Chunk(chunk_id("m.pdf", 1), text[second:],
                    ChunkMeta(**{**meta.to_dict(), "chunk_index": 1, "char_start": second, "char_end": len(text)}))]
    found = file_sentences(text, [(0, "i", 0), (second, "2", 1)], chunks)
    assert [c.text.strip() for c in found] == ["First page opens here.", "It ends now.", "Second page starts.",
                                               "Second page ends."]
    assert [c.id for c in found] == [sentence_id("m.pdf", n) for n in range(4)]
    assert [(c.meta.chunk_index, c.meta.page, c.meta.page_index) for c in found] == [
        (0, "i", 0), (0, "i", 0), (1, "2", 1), (1, "2", 1)]
    window = window_chunk(found[1], found[0:3])          # hit in the first chunk, its window runs onto page 2
    assert window.id == chunk_id("m.pdf", 0) and window.meta.page == "i"
    assert window.meta.pages == "i-2"
    assert json.loads(window.meta.page_breaks) == [[second, "2", 1]]
    assert window.text[second:].startswith("Second page starts.")
    # text that no chunk holds (dropped by a filter) gives no sentence
    assert [c.text.strip() for c in file_sentences(text, [], chunks[1:])] == ["Second page starts.",
                                                                            "Second page ends."]


def test_an_old_collection_says_once_it_has_no_sentence_index_and_chunks_still_answer(
        settings: Callable[..., Settings]) -> None:
    ingest(settings(), [("zoo.txt", ZOO)])
    assert not CollectionRegistry(settings()).open("zoo").has_sentences
    on = settings("strategies.sentence_window=2")
    found = retrieve(on, "heron")
    assert any("heron" in h.chunk.text for h in found.hits)
    said = [n for n in found.notices if "no sentence index" in n]
    assert said == ["Collection zoo has no sentence index, so strategies.sentence_window searched only its "
                    "chunks; the next `ragtui ingest` into it with the option on builds one."]
    assert not CollectionRegistry(on).open("zoo").has_sentences     # a search creates nothing
    ingest(on, [("other.txt", "A lone walrus.")])                    # the next ingest builds it for every file
    texts = sentence_texts(on)
    assert sorted(t.strip() for t in texts.values()) == sorted([sentence(i) for i in range(12)] + ["A lone walrus."])
    assert not [n for n in retrieve(on, "heron").notices if "no sentence index" in n]


def test_the_sentence_index_follows_edits_and_deletes(settings: Callable[..., Settings], tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "zoo.txt").write_text(ZOO)
    (folder / "farm.txt").write_text("The farmer milked the cow. The goat ate the fence.")
    on = settings("strategies.sentence_window=1")
    sync_folder(on, folder)
    assert any("goat" in t for t in sentence_texts(on).values())
    (folder / "farm.txt").write_text("The farmer sheared the sheep.")
    (folder / "zoo.txt").unlink()
    sync_folder(settings(), folder)          # the option is off now: the index built is still kept up to date
    assert sorted(sentence_texts(on).values()) == ["The farmer sheared the sheep."]
    assert retrieve(on, "heron", mode="keyword").hits == []


def test_a_damaged_sentence_index_is_said_and_chunks_still_answer(settings: Callable[..., Settings]) -> None:
    on = settings("strategies.sentence_window=1")
    ingest(on, [("zoo.txt", ZOO)])
    folder = CollectionRegistry(on).path("zoo") / "sentences"
    for toc in folder.glob("_MAIN_*.toc"):
        toc.unlink()
    found = retrieve(on, "heron", mode="keyword")
    assert any("heron" in h.chunk.text for h in found.hits)
    said = [n for n in found.notices if "sentences were not searched" in n]
    assert len(said) == 1 and "zoo" in said[0] and "sentences" in said[0]


def test_the_option_is_bounded(make_settings: Callable[..., Settings]) -> None:
    from ragtui.config import ConfigError

    with pytest.raises(ConfigError, match=r"strategies\.sentence_window"):
        make_settings("strategies.sentence_window=11")
