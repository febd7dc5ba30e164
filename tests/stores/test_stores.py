from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from ragtui.config import Settings
from ragtui.library import CollectionError, CollectionRegistry
from ragtui.model.chunks import Chunk, ChunkMeta, chunk_id
from tests.collection_builder import index_chunks
from tests.fake_ollama import hashed_embedding


def make_chunk(source: str, index: int, text: str, page: str = "") -> Chunk:
    meta = ChunkMeta(collection="c", source=source, file_hash="h", format="txt", chunk_index=index,
                     char_start=0, char_end=len(text), page=page, page_index=0 if page else -1,
                     text_entropy=4.2, word_count=len(text.split()))
    return Chunk(chunk_id(source, index), text, meta)


def test_chunk_ids_are_deterministic_and_distinct() -> None:
    assert chunk_id("a.md", 0) == chunk_id("a.md", 0)
    assert len({chunk_id("a.md", 0), chunk_id("a.md", 1), chunk_id("b.md", 0)}) == 3


def test_label_names_collection_file_and_page() -> None:
    assert make_chunk("docs/a.pdf", 0, "x", page="iv").label == "c/docs/a.pdf [p.iv]"
    assert make_chunk("a.md", 0, "x").label == "c/a.md"


def test_workspace_creates_lists_and_deletes_collections(make_settings: Callable[..., Settings]) -> None:
    from ragtui.workspace import Workspace

    with Workspace(make_settings()) as workspace:
        assert workspace.list_collections() == []
        workspace.create_collection("papers", topic="physics")
        with pytest.raises(CollectionError, match="already exists"):
            workspace.create_collection("papers")
        with pytest.raises(CollectionError, match="invalid collection name"):
            workspace.create_collection("../escape")
        info = workspace.list_collections()[0]
        assert (info.name, info.topic, info.chunks, info.state) == ("papers", "physics", 0, "empty")
        workspace.delete_collection("papers")
        assert workspace.collection_names() == []
        with pytest.raises(CollectionError, match="ragtui ingest"):
            workspace.collection("papers")
        with pytest.raises(CollectionError, match="invalid collection name"):
            workspace.collection("../papers")


def test_keyword_and_vector_stores_round_trip(make_settings: Callable[..., Settings]) -> None:
    from ragtui.stores.postings import Clause

    coll = CollectionRegistry(make_settings()).create("c")
    chunks = [make_chunk("a.md", 0, "Installing packages with pip"), make_chunk("a.md", 1, "Flushing the toilet"),
              make_chunk("b.md", 0, "Package installation is simple", page="3")]
    kw = coll.keyword
    assert index_chunks(kw, chunks) == 3
    assert kw.analyze("Installing packages") == ["instal", "packag"]
    with kw.scoring() as view:
        assert view.frequencies(["instal", "install"]) == (3, {"instal": 2, "install": 0})
        hits = view.search([Clause(("instal",)), Clause(("packag",))], 10, require_all=True)
    assert {c for c, _ in hits} == {chunks[0], chunks[2]}  # "installation" stems to "instal" too

    vec = coll.vectors("nomic-embed-text")
    vec.add(chunks, [hashed_embedding(c.text, 64) for c in chunks])
    top = vec.query(hashed_embedding("toilet flushing", 64), top_k=2)
    assert top[0][0] == chunks[1].id and top[0][1] == pytest.approx(1.0, abs=1e-6)
    assert kw.ids() == vec.ids() == {c.id for c in chunks}

    assert kw.delete_sources(["a.md"]) == 2
    vec.delete_ids([c.id for c in chunks if c.meta.source == "a.md"])
    assert kw.ids() == vec.ids() == {chunks[2].id}
    assert kw.doc_count() == 1 and kw.sources() == {"b.md"}


def test_a_rewritten_chunk_replaces_its_text_in_both_stores(make_settings: Callable[..., Settings]) -> None:
    coll = CollectionRegistry(make_settings()).create("c")
    old, new = make_chunk("a.md", 0, "old words"), make_chunk("a.md", 0, "new words")
    for chunk in (old, new):
        index_chunks(coll.keyword, [chunk])
        coll.vectors("m").add([chunk], [hashed_embedding(chunk.text, 8)])
    assert coll.keyword.get([old.id])[0].text == "new words"
    assert coll.vectors("m").vectors([old.id])[old.id] == pytest.approx(hashed_embedding("new words", 8))
    assert coll.vectors("m").count() == 1 and coll.keyword.doc_count() == 1


def test_delete_then_recreate_embedded_collection(make_settings: Callable[..., Settings]) -> None:
    reg = CollectionRegistry(make_settings())
    coll = reg.create("c")
    coll.vectors("m").add([make_chunk("a.md", 0, "x")], [[1.0, 0.0]])
    reg.delete("c")
    again = reg.create("c")
    assert again.vectors("m").count() == 0
    again.vectors("m").add([make_chunk("a.md", 0, "y")], [[0.0, 1.0]])
    assert again.vectors("m").count() == 1


def test_threads_opening_a_new_keyword_index_at_once_share_one(tmp_path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from ragtui.stores.keyword import KeywordIndex

    path = tmp_path / "whoosh"
    with ThreadPoolExecutor(max_workers=8) as pool:
        indexes = list(pool.map(lambda _: KeywordIndex(path), range(8)))
    index_chunks(indexes[0], [make_chunk("a.md", 0, "shared index")])
    assert all(ix.doc_count() == 1 for ix in indexes)


def test_chroma_names_keep_folded_collection_and_model_names_apart() -> None:
    from ragtui.stores.vector import chroma_name

    names = {chroma_name("ragtui-my_docs", "m"), chroma_name("ragtui-my-docs", "m"),
             chroma_name("chunks", "nomic-embed-text:v1.5"), chroma_name("chunks", "nomic-embed-text-v1.5")}
    assert len(names) == 4
    assert all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]", n) for n in names)
