"""Embedding beside extraction (issue 14): vectors are written while later files wait to be read, and a page
embedded from a file's old text never lands once the file was journaled again."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.events import IngestFinished, IngestProgress
from ragtui.ingest import pipeline
from ragtui.library import CollectionRegistry
from ragtui.model.chunks import Chunk
from ragtui.stores.records import DONE, INDEXING, FileRecord
from ragtui.workspace import Workspace
from tests.collection_builder import make_chunks
from tests.fake_ollama import FakeOllama, hashed_embedding

PROSE = ("The float valve refills the tank after each flush. A worn flapper lets water leak into the bowl. "
         "Pumps move water through pipes when pressure drops. ")


def test_files_are_read_and_indexed_while_an_embedding_call_is_out(settings: Settings, fake_ollama: FakeOllama,
                                                                   tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "BATCH_FILES", 2)          # a batch commit every two files
    monkeypatch.setattr(pipeline, "PROGRESS_EVERY_S", 0.0)   # a progress event after every file
    fake_ollama.embed_gate = gate = threading.Event()        # every embedding call waits for the gate
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(8):
        (root / f"f{i}.txt").write_text(f"File number {i}. " + PROSE * 3)
    model = settings.embed.model

    embedded_when_all_read: list[int] = []

    async def run() -> tuple[list[int], IngestFinished]:
        async with Workspace(settings) as workspace:
            read_while_held: list[int] = []
            async for event in workspace.ingest([root], "c"):
                if isinstance(event, IngestFinished):
                    return read_while_held, event
                if isinstance(event, IngestProgress) and not gate.is_set():
                    read_while_held.append(event.files_done)
                    if event.files_done == 8:                # every file read and indexed ...
                        records = workspace.collection("c").records
                        embedded_when_all_read.append(len(records.embedded_ids(model)))
                        gate.set()
            raise AssertionError("no IngestFinished")

    read_while_held, finished = asyncio.run(run())
    assert read_while_held[-1] == 8
    assert embedded_when_all_read == [0]                     # ... while no embedding call had come back
    assert fake_ollama.calls("/api/embed")
    report = finished.report
    assert report.chunks_embedded == report.chunks_indexed > 8 and not report.needs_embedding
    coll = CollectionRegistry(settings).open("c")
    try:
        with coll.vector_access():
            assert coll.vectors(model).ids() == coll.keyword.ids() == coll.records.embedded_ids(model)
    finally:
        coll.close()


def journal(coll: object, source: str, texts: list[str], status: str) -> list[Chunk]:
    """Step 1 of the write order for one file (its chunks replace the older ones), then its status."""
    records = coll.records  # type: ignore[attr-defined]
    chunks = make_chunks("c", {source: texts})
    records.begin([(FileRecord(source, status=INDEXING, chunks=len(chunks)), chunks)])
    if status == DONE:
        records.mark_done([source])
    return chunks


def test_a_page_embedded_from_old_text_is_not_stored(settings: Settings, fake_ollama: FakeOllama) -> None:
    model = settings.embed.model
    coll = CollectionRegistry(settings).create("c")
    run = pipeline._IngestRun(settings, coll)
    try:
        old = journal(coll, "a.txt", ["pumps and valves", "the old second chunk"], DONE)
        assert [c.id for c in coll.records.pending(model, 10)] == [c.id for c in old]
        vectors = [hashed_embedding(c.text, 64) for c in old]          # embedded from the old text ...
        new = journal(coll, "a.txt", ["pumps and valves", "a changed second chunk"], INDEXING)
        run.embed_left[model] = 2
        run._store_vectors(model, old, vectors)                         # ... lands after the file was journaled
        with coll.vector_access():
            assert coll.vectors(model).ids() == set()
        assert coll.records.embedded_ids(model) == set()

        coll.records.mark_done(["a.txt"])                               # the new version is done: the unchanged
        run._store_vectors(model, old, vectors)                         # chunk's vector is still right, the
        with coll.vector_access():                                      # changed one's is not
            assert coll.vectors(model).ids() == {old[0].id}
        assert coll.records.embedded_ids(model) == {old[0].id}
        assert [c.text for c in coll.records.pending(model, 10)] == [new[1].text]
    finally:
        coll.close()


def test_a_page_with_nothing_to_reuse_does_not_wait_for_the_vector_write(settings: Settings,
                                                                          fake_ollama: FakeOllama) -> None:
    """While a vector write holds the run's stores lock, the next page is embedded (its vectors held for the
    next, larger write); only a page that has a stored vector to reuse waits for the lock to read it."""
    model = settings.embed.model
    coll = CollectionRegistry(settings).create("c")
    run = pipeline._IngestRun(settings, coll)
    try:
        stored = journal(coll, "a.txt", ["pumps and valves"], DONE)
        run.embed_left[model] = 1
        run._store_vectors(model, stored, [hashed_embedding(stored[0].text, 64)])
        fresh = journal(coll, "b.txt", ["a text no chunk has yet"], DONE)
        copy = journal(coll, "c.txt", ["pumps and valves"], DONE)

        def found_in_thread(chunks: list[Chunk]) -> tuple[threading.Thread, list[dict]]:
            out: list[dict] = []
            thread = threading.Thread(target=lambda: out.append(run.reuse.found(model, chunks)), daemon=True)
            thread.start()
            return thread, out

        with run._stores_lock:                                  # a write to the vector store is under way
            thread, out = found_in_thread(fresh)
            thread.join(timeout=30)
            assert out == [{}]                                  # nothing to reuse: answered without the lock
            waiting, reused = found_in_thread(copy)
            waiting.join(timeout=0.5)
            assert waiting.is_alive() and reused == []          # a vector to reuse: read once the write is done
        waiting.join(timeout=30)
        assert list(reused[0]) == [copy[0].id]
    finally:
        coll.close()
