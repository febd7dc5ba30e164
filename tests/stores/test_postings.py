"""BM25 from cached posting arrays (stores/postings.py) against hand-computed values, a from-scratch
computation, bm25s and Whoosh's own phrase matcher, across adds, deletes, replacements and merges."""

from __future__ import annotations

import math
import random
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ragtui.model.chunks import Chunk
from ragtui.stores.keyword import KeywordIndex
from ragtui.stores.postings import Bm25Params, Clause
from tests.collection_builder import index_chunks, make_chunks, whoosh_segments

K1, B = 1.2, 0.75
PARAMS = Bm25Params(K1, B)
WORDS = ("pump", "valve", "pressure", "flow", "water", "tank", "pipe", "seal", "motor", "shaft", "bearing",
         "gear", "torque", "energy", "heat", "cycle", "steel", "joint", "weld", "bolt", "frame", "beam",
         "column", "force", "fluid", "turbine", "blade", "rotor", "stator", "sensor")


def corpus(seed: int, files: int, per_file: int = 3) -> dict[str, list[str]]:
    """Word salad with Zipf-like frequencies and lengths from 3 to 60 words (length normalisation matters)."""
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    return {f"f{seed}-{i}.txt": [" ".join(rng.choices(WORDS, weights, k=rng.randint(3, 60))) for _ in range(per_file)]
            for i in range(files)}


def from_scratch(index: KeywordIndex, live: dict[str, str], clauses: list[Clause], *,
                 require_all: bool, params: Bm25Params = PARAMS) -> dict[str, float]:
    """Lucene BM25 computed directly from the live chunks' analysed tokens: {chunk id: score}."""
    tokens = {cid: index.analyze(text) for cid, text in live.items()}
    n = len(tokens)
    avgdl = sum(len(t) for t in tokens.values()) / n

    def tf(toks: list[str], terms: tuple[str, ...]) -> int:
        return sum(toks[i:i + len(terms)] == list(terms) for i in range(len(toks) - len(terms) + 1))

    scores: dict[str, float] = {}
    for clause in clauses:
        df = sum(1 for t in tokens.values() if tf(t, clause.terms))
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for cid, toks in tokens.items():
            if f := tf(toks, clause.terms):
                norm = params.k1 * (1 - params.b + params.b * len(toks) / avgdl)
                scores[cid] = scores.get(cid, 0.0) + clause.boost * idf * f / (f + norm)
    if require_all:
        scores = {cid: s for cid, s in scores.items() if all(tf(tokens[cid], c.terms) for c in clauses)}
    return scores


def searched(index: KeywordIndex, clauses: list[Clause], *, require_all: bool) -> dict[str, float]:
    with index.scoring() as view:
        return {c.id: s for c, s in view.search(clauses, 10_000, require_all=require_all)}


def assert_scores_match(index: KeywordIndex, live: dict[str, str], rng: random.Random) -> None:
    for _ in range(12):
        words = rng.sample(WORDS, rng.randint(1, 4))
        clauses = [Clause(tuple(index.analyze(w)), rng.choice((1.0, 0.25))) for w in words]
        for require_all in (True, False):
            want = from_scratch(index, live, clauses, require_all=require_all)
            got = searched(index, clauses, require_all=require_all)
            assert got.keys() == want.keys()
            for cid, score in want.items():
                assert got[cid] == pytest.approx(score, rel=1e-6)


def test_scores_by_hand(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "w")
    index_chunks(index, make_chunks("c", {"a.txt": ["pump pump valve", "valve seal"], "b.txt": ["seal"]}))
    with index.scoring() as view:
        assert (view.bm25.n_docs, view.bm25.avgdl) == (3, 2.0)          # lengths 3, 2, 1
        hits = view.search([Clause(("pump",))], 10, require_all=False)
    # N = 3, df = 1: idf = ln(1 + 2.5 / 1.5); tf = 2, dl = 3: 2 / (2 + 1.2 * (0.25 + 0.75 * 1.5))
    assert [(c.text, s) for c, s in hits] == [("pump pump valve", pytest.approx(0.9808292530 * 2 / 3.65))]
    assert hits[0][1] == pytest.approx(0.5374406866, rel=1e-6)


def test_cached_scores_equal_a_from_scratch_computation_through_adds_deletes_replacements_and_merges(
        tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "w")
    rng = random.Random(5)
    live: dict[str, str] = {}

    def add(chunks: list[Chunk]) -> None:
        index_chunks(index, chunks)
        live.update({c.id: c.text for c in chunks})

    for seed in range(4):                                  # four commits, four segments
        add(make_chunks("c", corpus(seed, 6)))
    assert whoosh_segments(index) == 4
    assert_scores_match(index, live, rng)
    first_segments = index.cached_segments()

    gone = make_chunks("c", corpus(1, 6))[:7]               # deletes, in two segments' worth of files
    index.delete_ids([c.id for c in gone])
    for c in gone:
        del live[c.id]
    add([Chunk(c.id, c.text + " turbine turbine", c.meta) for c in make_chunks("c", corpus(2, 6))[:6]])   # 2 files
    add(make_chunks("c", corpus(9, 2)))                      # a small new segment
    assert_scores_match(index, live, rng)
    assert first_segments <= index.cached_segments()        # a commit kept the arrays it did not change

    before = whoosh_segments(index)
    assert index.merge() < before
    assert_scores_match(index, live, rng)
    with index.scoring():
        assert len(index.cached_segments()) == whoosh_segments(index)   # retired segments left the cache
    files = sorted(p.name for p in index.path.glob("*.bm25_terms.npy"))
    assert len(files) == whoosh_segments(index)              # merge() saved every segment's postings file

    add(make_chunks("c", corpus(12, 3)))                     # a segment without a file beside ones with
    gone = make_chunks("c", corpus(0, 6))[:4]
    index.delete_ids([c.id for c in gone])
    for c in gone:
        del live[c.id]
    assert_scores_match(index, live, rng)
    index.merge()
    assert_scores_match(index, live, rng)
    kept = {p.name.split(".")[0] for p in index.path.glob("*.bm25_*.npy")}
    assert kept == index.cached_segments()                   # a retired segment's files left with it


def test_ranking_is_identical_to_bm25s(tmp_path: Path) -> None:
    bm25s = pytest.importorskip("bm25s")
    index = KeywordIndex(tmp_path / "w", Bm25Params(K1, B))
    chunks = make_chunks("c", corpus(11, 60))
    for start in range(0, len(chunks), 48):                  # several segments, whole files (3 chunks) each
        index_chunks(index, chunks[start:start + 48])
    reference = bm25s.BM25(k1=K1, b=B, method="lucene")
    reference.index([index.analyze(c.text) for c in chunks], show_progress=False)
    rng = random.Random(3)
    for _ in range(20):
        terms = [index.analyze(w)[0] for w in rng.sample(WORDS, rng.randint(1, 5))]
        expected = reference.get_scores(terms)
        order = sorted((i for i in range(len(chunks)) if expected[i] > 0), key=lambda i: (-expected[i], i))[:20]
        with index.scoring() as view:
            hits = view.search([Clause((t,)) for t in terms], 20, require_all=False)
        assert [c.id for c, _ in hits] == [chunks[i].id for i in order]
        assert [s for _, s in hits] == pytest.approx([float(expected[i]) for i in order], rel=1e-5)


def test_a_phrase_synonym_matches_exactly(tmp_path: Path) -> None:
    from whoosh.query import Phrase

    index = KeywordIndex(tmp_path / "w")
    texts = {"a.txt": ["a wind tunnel test", "wind tunnel, then another wind tunnel"],
             "b.txt": ["tunnel wind", "wind in the long tunnel", "windy tunnels"]}
    chunks = make_chunks("c", texts)
    index_chunks(index, chunks)
    clause = Clause(("wind", "tunnel"), 0.25)
    got = searched(index, [clause], require_all=False)
    assert set(got) == {chunks[0].id, chunks[1].id}
    live = {c.id: c.text for c in chunks}
    assert got == pytest.approx(from_scratch(index, live, [clause], require_all=False), rel=1e-6)
    with index.scoring() as view:
        assert view.bm25.df(("wind", "tunnel")) == 2
    whoosh_docs = {hit["chunk_id"] for hit in index.searcher().search(Phrase("text", ["wind", "tunnel"]))}
    assert whoosh_docs == set(got)


def test_an_index_from_before_the_length_column_scores_with_whooshs_lengths(tmp_path: Path) -> None:
    from whoosh import index as whoosh_index
    from whoosh.analysis import StemmingAnalyzer
    from whoosh.fields import ID, STORED, TEXT, Schema

    old = Schema(chunk_id=ID(stored=True, unique=True), source=ID(stored=True),
                 text=TEXT(analyzer=StemmingAnalyzer(), stored=True), meta=STORED)
    ix = whoosh_index.create_in(str(tmp_path), old)
    first = make_chunks("c", {"a.txt": ["pump " * 10 + "valve", "valve seal"]})
    with ix.writer() as w:
        for c in first:
            w.add_document(chunk_id=c.id, source=c.meta.source, text=c.text, meta="{}")
    index = KeywordIndex(tmp_path)
    with index.scoring() as view:
        assert view.bm25.avgdl == (12 + 2) / 2               # Whoosh's one-byte length of 11 tokens is 12
    second = make_chunks("c", {"b.txt": ["pump " * 10 + "seal"]})
    index_chunks(index, second)                                    # the next write adds the length column
    with index.scoring() as view:
        assert view.bm25.avgdl == (12 + 2 + 11) / 3          # new chunks: exact counts


def test_a_query_during_writes_sees_one_whole_generation(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "w")
    batch = 5
    done = threading.Event()
    seen: Counter[int] = Counter()
    failures: list[str] = []

    def write() -> None:
        for b in range(25):
            chunks = make_chunks("c", {f"b{b}.txt": [f"pump batch{b} " + "valve " * i for i in range(batch)]})
            index_chunks(index, chunks)
            if b % 8 == 7:
                index.merge()
        done.set()

    def read() -> None:
        while not done.is_set() or not seen:
            with index.scoring() as view:
                n = view.bm25.n_docs
                hits = view.search([Clause(("pump",))], 10_000, require_all=False)
                df = view.bm25.df(("pump",))
            if n % batch or len(hits) != n or df != n:
                failures.append(f"N={n}, hits={len(hits)}, df={df}")
            seen[n] += 1

    writer = threading.Thread(target=write)
    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in (writer, *readers):
        t.start()
    for t in (writer, *readers):
        t.join()
    assert not failures
    assert len(seen) > 1                                   # the readers did see the index grow


def test_the_postings_file_serves_every_term_as_whoosh_does(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "w")
    long_token = "x" * 700
    texts = {"a.txt": ["Zürich naïve café pump", f"{long_token} pump pump"], "b.txt": ["zebra café"]}
    chunks = make_chunks("c", texts)
    index_chunks(index, chunks)
    clauses = [Clause(tuple(index.analyze(w))) for w in ("zürich", "café", long_token, "pump", "absent")]
    before = {c.terms: searched(index, [c], require_all=False) for c in clauses}
    index.merge()                                           # one segment: its postings file is written
    assert len(list(index.path.glob("*.bm25_terms.npy"))) == 1
    reopened = KeywordIndex(tmp_path / "w")
    after = {c.terms: searched(reopened, [c], require_all=False) for c in clauses}
    assert after == before
    assert set(after[("café",)]) == {chunks[0].id, chunks[2].id} and after[("absent",)] == {}


def test_merge_folds_batch_segments_and_leaves_a_big_one_alone(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "w")
    for seed, files in ((20, 3), (21, 3), (22, 3), (23, 1)):   # batches of 9 chunks, then a short one of 3
        index_chunks(index, make_chunks("c", corpus(seed, files)))
    assert whoosh_segments(index) == 4
    assert index.merge() == 1
    big = _segment_ids(index)
    index_chunks(index, make_chunks("c", corpus(24, 1)))
    assert index.merge() == 2                                  # 3 new chunks never rewrite the 30 below
    index_chunks(index, make_chunks("c", corpus(25, 1)))
    assert index.merge() == 2                                  # the two small ones merge, the big one stays
    assert big <= _segment_ids(index)


def _segment_ids(index: KeywordIndex) -> set[str]:
    return {leaf.segment().segment_id() for leaf, _ in index.searcher().reader().leaf_readers()}


@pytest.mark.parametrize("source", ["whoosh", "positions file", "int32 positions file", "postings file only"])
def test_phrases_match_whooshs_phrase_matcher_on_salad_and_long_repeats(tmp_path: Path, source: str) -> None:
    """Positions from Whoosh's blocks (batched decoding: one-position values, runs past pickle's 1,000-item
    batches, 3-word phrases), from the merge-time positions file (uint16, or int32 past 65,535 tokens), and
    from a postings file written before positions were (its phrases fall back to Whoosh)."""
    from whoosh.query import Phrase

    index = KeywordIndex(tmp_path / "w")
    texts = corpus(7, 40)
    repeats = 33_000 if source == "int32 positions file" else 1200
    texts["long.txt"] = [" ".join(["wind tunnel"] * repeats + ["pump valve seal"] * 3), "pump valve", "valve pump"]
    chunks = make_chunks("c", texts)
    index_chunks(index, chunks)
    if source != "whoosh":
        index.merge()
        [positions] = index.path.glob("*.bm25_positions.npy")
        assert np.load(positions).dtype == (np.int32 if source == "int32 positions file" else np.uint16)
        if source == "postings file only":
            for path in index.path.glob("*.bm25_position*.npy"):
                path.unlink()
            index = KeywordIndex(tmp_path / "w")
    live = {c.id: c.text for c in chunks}
    rng = random.Random(3)
    phrases = [("wind", "tunnel"), ("pump", "valve"), ("pump", "valve", "seal")]
    phrases += [tuple(rng.sample(WORDS, rng.randint(2, 3))) for _ in range(12)]
    for words in phrases:
        clause = Clause(tuple(index.analyze(w)[0] for w in words), 0.5)
        got = searched(index, [clause], require_all=False)
        assert got == pytest.approx(from_scratch(index, live, [clause], require_all=False), rel=1e-6), words
        matched = {hit["chunk_id"] for hit in index.searcher().search(Phrase("text", list(clause.terms)), limit=None)}
        assert matched == set(got), words


def test_a_postings_file_finished_in_small_slices_is_the_same_file(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The arrays go to disk term by term and are copied behind their headers slice by slice (bounded memory at
    a million chunks): the files do not depend on the slice size."""
    from ragtui.stores import npy_stream

    texts = corpus(9, 12)
    texts["long.txt"] = [" ".join(["wind tunnel"] * 40), "pump valve"]

    def written(folder: str) -> dict[str, bytes]:
        index = KeywordIndex(tmp_path / folder)
        index_chunks(index, make_chunks("c", texts))
        index.merge()
        return {path.name.split(".", 1)[1]: path.read_bytes() for path in index.path.glob("*.bm25_*.npy")}

    whole = written("whole")
    monkeypatch.setattr(npy_stream, "SLICE_ITEMS", 3)
    sliced = written("sliced")
    assert len(whole) == 7 and sliced == whole
