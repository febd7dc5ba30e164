"""The 8-bit copy of a model's vectors beside an embedded Chroma (stores/vector_copy.py): it ranks as an exact
search does, follows every Chroma write (adds, replacements, deletes, a re-embed), is ignored when a write was
cut short or it is missing, and is then made again by the next write; while another thread loads Chroma's
index, a query is answered from it. Ingests run through the real CLI against the fake Ollama over HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ragtui.config import Settings
from ragtui.library import Collection, CollectionRegistry
from ragtui.model.chunks import chunk_id
from ragtui.stores.vector import VectorIndex, chroma_name
from ragtui.stores.vector_copy import STATE, VectorCopy
from tests.cli_run import cli
from tests.fake_ollama import FakeOllama, hashed_embedding

MODEL = "nomic-embed-text"
DOCS = {
    "valve.txt": "The float valve refills the cistern after each flush until the float rises.",
    "pump.txt": "A centrifugal pump moves water by spinning an impeller inside its casing.",
    "roof.txt": "Clay tiles on a pitched roof shed rain into the gutters along the eaves.",
    "boiler.txt": "The boiler heats water for the radiators and the taps through a heat exchanger.",
}
QUESTIONS = ["float valve cistern", "pump impeller water", "roof tiles rain", "boiler heat radiators"]


def exact_top(matrix: Any, ids: list[str], query: Any, k: int) -> list[tuple[str, float]]:
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    scores = unit @ (query / np.linalg.norm(query))
    order = np.argsort(-scores)[:k]
    return [(ids[i], float(scores[i])) for i in order]


def test_the_copy_ranks_as_an_exact_search_does_through_replacements_deletes_and_compaction(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    dim = 48
    held: dict[str, Any] = {}
    copy = VectorCopy(tmp_path / "copy")
    copy.rebuild(dim, [])
    for page in range(4):
        ids = [f"doc{page}-{n:05d}" for n in range(500)]
        vectors = rng.normal(size=(500, dim)).astype(np.float32) * rng.uniform(0.01, 50.0)
        copy.put(ids, vectors)
        held.update(zip(ids, vectors, strict=True))
    assert copy.view() is None                                      # not clean before its commit
    copy.commit()
    replaced = [f"doc1-{n:05d}" for n in range(0, 500, 5)]
    new_vectors = rng.normal(size=(len(replaced), dim)).astype(np.float32)
    copy.begin()
    copy.put(replaced, new_vectors)
    held.update(zip(replaced, new_vectors, strict=True))
    gone = [f"doc2-{n:05d}" for n in range(300)] + ["never-held"]
    copy.remove(gone)
    for cid in gone:
        held.pop(cid, None)
    long_id = "a-chunk-id-longer-than-any-before-it-" + "x" * 40          # the ids are rewritten wider
    long_vector = rng.normal(size=(1, dim)).astype(np.float32)
    copy.put([long_id], long_vector)
    held[long_id] = long_vector[0]
    copy.commit()
    view = copy.view()
    assert view is not None and view.count == len(held) == 1701
    assert view.search(long_vector[0], 1)[0][0] == long_id
    assert view.search(held["doc3-00042"], 1)[0][0] == "doc3-00042"
    ids, matrix = list(held), np.stack(list(held.values()))
    for _ in range(20):
        query = rng.normal(size=dim).astype(np.float32).tolist()
        got, want = view.search(query, 50), exact_top(matrix, ids, np.asarray(query), 50)
        assert len({cid for cid, _ in got} & {cid for cid, _ in want}) >= 48     # near ties may swap at the edge
        exact = dict(exact_top(matrix, ids, np.asarray(query), len(ids)))
        assert max(abs(score - exact[cid]) for cid, score in got) < 0.01
        assert not {cid for cid, _ in got} & set(gone)


def test_a_copy_left_unclean_or_short_is_ignored_and_made_again(tmp_path: Path) -> None:
    copy = VectorCopy(tmp_path / "copy")
    copy.rebuild(4, [(["a", "b"], np.eye(2, 4, dtype=np.float32))])
    copy.commit()
    assert copy.begin() is True and copy.view() is None             # a writer is (or was killed) mid-write
    state = json.loads((copy.folder / STATE).read_text())
    (copy.folder / STATE).write_text(json.dumps({**state, "clean": True, "rows": 9}))  # more rows than the files
    assert copy.view() is None and copy.begin() is False


def ingest(tmp_path: Path, fake: FakeOllama, docs: dict[str, str], *extra: str) -> None:
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text)
    done = cli(tmp_path, fake.url, "ingest", str(folder), "-c", "c", *extra)
    assert done.returncode == 0, done.stderr


def copy_folder(tmp_path: Path) -> Path:
    return tmp_path / "data" / "collections" / "c" / "vector_copy" / chroma_name("chunks", MODEL)


@contextmanager
def opened(make_settings: Callable[..., Settings]) -> Iterator[Collection]:
    collection = CollectionRegistry(make_settings()).open("c")
    try:
        yield collection
    finally:
        collection.close()


@contextmanager
def loading(index: VectorIndex) -> Iterator[None]:
    """Another thread holding the index's load (what a thread inside Chroma's first read does)."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with index._loading:
            held.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(30)
    try:
        yield
    finally:
        release.set()
        thread.join(30)


def answers(index: VectorIndex, dim: int, questions: list[str], k: int) -> list[list[tuple[str, float]]]:
    return [index.query(hashed_embedding(q, dim), k) for q in questions]


def same_answers(early: list[list[tuple[str, float]]], every: list[list[tuple[str, float]]]) -> None:
    """Each early answer ranks as Chroma does, up to ties: the same scores place by place, and each hit's own
    score as Chroma gives it (`every`: Chroma's answer over all the vectors)."""
    for got, scored in zip(early, every, strict=True):
        chroma = dict(scored)
        assert all(abs(a - b) < 0.01 for (_, a), (_, b) in zip(got, scored, strict=False))
        assert all(abs(chroma[cid] - score) < 0.01 for cid, score in got)


def test_while_another_thread_loads_chromas_index_a_query_is_answered_from_the_copy(
        tmp_path: Path, fake_ollama: FakeOllama, make_settings: Callable[..., Settings]) -> None:
    ingest(tmp_path, fake_ollama, DOCS)
    assert VectorCopy(copy_folder(tmp_path)).view() is not None
    with opened(make_settings) as collection, collection.vector_access():
        index = collection.vectors(MODEL)
        assert isinstance(index, VectorIndex)
        with loading(index):
            dim = index.dimension()
            assert dim is not None and index.count() == len(DOCS)
            early = answers(index, dim, QUESTIONS, 3)
            assert not index._loaded                       # none of it was asked of Chroma
        every = answers(index, dim, QUESTIONS, len(DOCS))
        assert index._loaded
    same_answers(early, every)
    assert [hits[0][0] for hits in early] == [chunk_id(name, 0) for name in DOCS]


def test_the_copy_follows_a_changed_file_a_removed_file_and_a_reembed(
        tmp_path: Path, fake_ollama: FakeOllama, make_settings: Callable[..., Settings]) -> None:
    ingest(tmp_path, fake_ollama, DOCS)
    changed = {**DOCS, "pump.txt": "A piston pump pushes oil through the hydraulic press in short strokes."}
    ingest(tmp_path, fake_ollama, changed)
    (tmp_path / "docs" / "roof.txt").unlink()
    done = cli(tmp_path, fake_ollama.url, "collections", "remove", "c", "roof.txt")
    assert done.returncode == 0, done.stderr
    done = cli(tmp_path, fake_ollama.url, "collections", "reembed", "c")
    assert done.returncode == 0, done.stderr
    view = VectorCopy(copy_folder(tmp_path)).view()
    assert view is not None and view.count == 3
    with opened(make_settings) as collection, collection.vector_access():
        index = collection.vectors(MODEL)
        assert isinstance(index, VectorIndex)
        with loading(index):
            dim = index.dimension()
            assert dim is not None
            early = answers(index, dim, ["piston pump hydraulic oil", *QUESTIONS], 3)
        every = answers(index, dim, ["piston pump hydraulic oil", *QUESTIONS], 3)
        assert index.count() == 3
    same_answers(early, every)
    assert early[0][0][0] == chunk_id("pump.txt", 0)                # the changed file's new vector
    assert chunk_id("roof.txt", 0) not in {cid for hits in early for cid, _ in hits}


def test_a_collection_without_a_copy_or_with_one_cut_short_is_read_from_chroma_and_the_next_write_makes_it(
        tmp_path: Path, fake_ollama: FakeOllama, make_settings: Callable[..., Settings]) -> None:
    ingest(tmp_path, fake_ollama, DOCS)
    folder = copy_folder(tmp_path)
    for damage in ("missing", "cut short"):
        if damage == "missing":                            # as a collection written before the copy has it
            VectorCopy(folder).delete()
        else:                                              # as a writer killed mid-write leaves it
            VectorCopy(folder).begin()
        with opened(make_settings) as collection, collection.vector_access():
            index = collection.vectors(MODEL)
            assert isinstance(index, VectorIndex)
            with loading(index):
                assert index._early() is None              # nothing to answer from: the query waits for Chroma
        n = len(DOCS) + (1 if damage == "missing" else 2)
        ingest(tmp_path, fake_ollama, {f"more{n}.txt": f"Note {n}: the heat pump draws warmth from the garden."})
        view = VectorCopy(folder).view()
        assert view is not None and view.count == n        # every vector Chroma holds, not only the new one


def test_a_query_does_not_wait_for_another_threads_prepare(
        tmp_path: Path, fake_ollama: FakeOllama, make_settings: Callable[..., Settings]) -> None:
    """A one-shot command's prepare, started beside its imports, holds the prepare for Chroma's whole load; the
    query's own prepare (the retriever asks for one) returns at once, and its legs read what each needs."""
    ingest(tmp_path, fake_ollama, DOCS)
    with opened(make_settings) as collection:
        returned = threading.Event()

        def prepare() -> None:
            collection.prepare([MODEL])
            returned.set()

        with collection._preparing:                       # another thread's prepare, mid-load
            thread = threading.Thread(target=prepare)
            thread.start()
            assert returned.wait(10)
        thread.join(10)
        collection.prepare([MODEL])                       # none under way: this one opens the stores itself
        with collection.vector_access():
            index = collection.vectors(MODEL)
            assert isinstance(index, VectorIndex) and index._loaded


def test_chunks_tied_on_the_vector_leg_rank_alike_from_the_copy_and_from_chroma(
        tmp_path: Path, fake_ollama: FakeOllama, make_settings: Callable[..., Settings]) -> None:
    # Three words each, one shared with the question: the same cosine for every file, so only the tie rule
    # orders them (the copy meets them in row order, HNSW in the order of its graph walk).
    tied = {"gamma.txt": "Valve seats wear.", "alpha.txt": "Pumps need priming.", "mid.txt": "Gutters shed rain."}
    ingest(tmp_path, fake_ollama, tied)
    with opened(make_settings) as collection, collection.vector_access():
        index = collection.vectors(MODEL)
        assert isinstance(index, VectorIndex)
        with loading(index):
            dim = index.dimension()
            assert dim is not None
            early = index.query(hashed_embedding("valve pumps gutters", dim), 3)
            assert not index._loaded
        later = index.query(hashed_embedding("valve pumps gutters", dim), 3)
        assert index._loaded
    assert len({round(score, 5) for _, score in later}) == 1                  # a three-way tie
    assert [cid for cid, _ in early] == [cid for cid, _ in later] == sorted(cid for cid, _ in later)
