"""Reading chunks back from the keyword index: the chunk column (one pread per hit, stores/stored.py) and the
stored fields of indexes written before it, against Whoosh's own readers, through writes, deletes and merges."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ragtui.model import Chunk
from ragtui.stores import stored
from ragtui.stores.keyword import CHUNK, KeywordIndex, _chunk_column
from ragtui.stores.postings import Clause
from tests.collection_builder import index_chunks, make_chunks, whoosh_segments

ODD_TEXTS = [
    "pump valve café naïve Ünïcödé ﬁ ligature",
    "pump 東京の水ポンプ 파이프 насос مضخة",
    "pump emoji 🚰💧 and a lone surrogate \ud800 kept",
    "pump control \x1b[31m escape \x00 nul \u202e bidi",
    "pump " + "long text " * 20_000,
]


def odd_chunks(source: str = "odd.txt") -> list[Chunk]:
    chunks = make_chunks("c", {source: ODD_TEXTS})
    return [replace(c, meta=replace(c.meta, page=str(i + 1), page_index=i, heading="Intro > Pumps",
                                    text_entropy=4.25)) for i, c in enumerate(chunks)]


def hits(index: KeywordIndex, term: str) -> dict[str, Chunk]:
    with index.scoring() as view:
        return {c.id: c for c, _ in view.search([Clause((term,))], 10_000, require_all=False)}


def test_chunks_read_back_whole_through_the_column(tmp_path: Path) -> None:
    chunks = odd_chunks()
    index = KeywordIndex(tmp_path)
    index_chunks(index, chunks)
    assert index.get([c.id for c in reversed(chunks)]) == list(reversed(chunks))
    assert hits(index, "pump") == {c.id: c for c in chunks}
    fields = index.searcher().stored_fields(0)
    assert set(fields) == {"chunk_id", "source"}            # text and metadata are not stored twice
    index.close()
    reopened = KeywordIndex(tmp_path)                       # a new process's view: nothing cached
    assert reopened.get([c.id for c in chunks]) == chunks
    assert reopened.get(["no-such-id"]) == []


def _legacy_index(path: Path, chunks: list[Chunk]) -> None:
    """An index as the store wrote it before the chunk column: text and JSON metadata in the stored fields."""
    from whoosh import index as whoosh_index
    from whoosh.columns import NumericColumn
    from whoosh.fields import COLUMN, ID, STORED, TEXT, Schema

    from ragtui.stores.analysis import analyzer

    schema = Schema(chunk_id=ID(stored=True, unique=True), source=ID(stored=True),
                    text=TEXT(analyzer=analyzer(), stored=True), meta=STORED, length=COLUMN(NumericColumn("I")))
    ix = whoosh_index.create_in(str(path), schema)
    with ix.writer() as w:
        for c in chunks:
            terms = [t.text for t in analyzer()(c.text)]
            w.add_document(chunk_id=c.id, source=c.meta.source, text=terms, _stored_text=c.text, length=len(terms),
                           meta=json.dumps(c.meta.to_dict()))


def test_an_index_from_before_the_chunk_column_reads_old_and_new_chunks_through_merges(tmp_path: Path) -> None:
    old = make_chunks("c", {"old.txt": [f"pump old {i} " + "valve " * i for i in range(5)]})
    _legacy_index(tmp_path, old)
    index = KeywordIndex(tmp_path)
    assert index.get([c.id for c in old]) == old
    new = odd_chunks("new.txt")
    index_chunks(index, new)                                       # the first write adds the chunk column
    index.delete_ids([old[0].id])
    everything = old[1:] + new
    assert index.get([c.id for c in everything]) == everything
    assert hits(index, "pump") == {c.id: c for c in everything}
    assert index.merge() == 1                               # one segment: old documents have no column value
    index.close()
    merged = KeywordIndex(tmp_path)
    assert whoosh_segments(merged) == 1
    assert merged.get([c.id for c in everything]) == everything
    assert hits(merged, "pump") == {c.id: c for c in everything}


@pytest.mark.parametrize("through", ["pread", "whoosh"])
def test_per_document_reads_equal_whooshs_own_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      through: str) -> None:
    if through == "whoosh":                                 # a layout not known here: Whoosh reads it
        monkeypatch.setattr(stored.RawColumn, "open", classmethod(lambda cls, *a: None))
    index = KeywordIndex(tmp_path)
    for batch in range(4):
        index_chunks(index, make_chunks("c", {f"b{batch}.txt": [f"pump batch{batch} {i} " + "valve " * i
                                                         for i in range(7)]}))
    index.delete_sources(["b1.txt"])
    for merged in (False, True):
        if merged:
            index.merge()
        searcher = index.searcher()
        reader = searcher.reader()
        column = reader.column_reader(CHUNK, _chunk_column())
        with index.scoring() as view:
            live = list(reader.all_doc_ids())
            assert len(live) == 21 and len(reader.leaf_readers()) == (1 if merged else 4)
            shuffled = live[::-1] + live[::2]                # across segments, out of order, repeated
            assert view.bm25.column_values(shuffled, CHUNK, _chunk_column()) == [column[d] for d in shuffled]
            opened = [part.segment._columns[CHUNK] for part in view.bm25._parts if CHUNK in part.segment._columns]
            assert len(opened) == (1 if merged else 3)              # every segment that holds a live chunk
            assert all(isinstance(c, stored.RawColumn) if through == "pread" else c is None for c in opened)
            assert view.bm25.stored_fields(shuffled) == [searcher.stored_fields(d) for d in shuffled]
            assert [c.id for c in view.chunks(shuffled)] == [searcher.stored_fields(d)["chunk_id"] for d in shuffled]
            assert [view.bm25.column_values([d], CHUNK, _chunk_column()) for d in live] == [[column[d]] for d in live]


def test_decoded_hits_are_kept_up_to_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtui.stores import keyword

    monkeypatch.setattr(keyword, "CHUNKS_CACHED", 4)
    chunks = make_chunks("c", {"a.txt": [f"pump {i}" for i in range(10)]})
    index = KeywordIndex(tmp_path)
    index_chunks(index, chunks)
    ids = [c.id for c in chunks]
    assert index.get(ids + ids[:3]) == chunks + chunks[:3]      # more at once than the bound: all returned
    assert [c.id for c in index._chunks.values()] == [ids[9], *ids[:3]]   # the four used last, oldest first
    assert index.get(ids[::-1]) == chunks[::-1]
    assert [c.id for c in index._chunks.values()] == ids[3::-1]


def test_a_merge_during_a_query_changes_nothing_it_reads(tmp_path: Path) -> None:
    """A query's generation stays readable when another writer merges and Whoosh deletes its segment files."""
    a = make_chunks("c", {"a.txt": ["pump a", "pump b"]})
    b = make_chunks("c", {"b.txt": ["pump c"]})
    index = KeywordIndex(tmp_path)
    index_chunks(index, a)
    index_chunks(index, b)
    index.prepare()
    other = KeywordIndex(tmp_path)                          # an ingest in another thread or process
    with index.scoring() as view:
        found = view.bm25.search([Clause(("pump",))], 10, require_all=False)
        other.delete_sources(["a.txt"])
        assert other.merge() == 1
        assert [c.id for c in view.chunks([doc for doc, _ in found])] == [c.id for c in a + b]
        assert view.get([b[0].id, a[1].id]) == [b[0], a[1]]
    assert index.get([b[0].id, a[1].id]) == [b[0]]           # the next generation


def test_df_from_postings_is_whooshs_doc_frequency_with_deleted_leading_postings(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path)
    index_chunks(index, make_chunks("c", {"x.txt": ["zebra crossing pump", "zebra pump seal"]}))
    index_chunks(index, make_chunks("c", {"y.txt": ["pump valve zebra", "seal valve"]}))
    warm = KeywordIndex(tmp_path)
    terms = ["zebra", "cross", "pump", "seal", "valv", "absent"]
    before = frequencies(warm, terms)                       # postings cached before the delete
    index.delete_sources(["x.txt"])                         # every leading posting of zebra, pump and cross
    fresh = KeywordIndex(tmp_path)
    whoosh = {t: fresh.searcher().doc_frequency("text", t) for t in terms}
    assert whoosh["cross"] == 1 and whoosh["zebra"] == 3    # Whoosh counts deleted chunks: so does the IDF gate
    assert frequencies(fresh, terms) == (2, whoosh)
    assert frequencies(warm, terms) == (2, whoosh)
    assert before == (4, whoosh)


def frequencies(index: KeywordIndex, terms: list[str]) -> tuple[int, dict[str, int]]:
    with index.scoring() as view:
        return view.frequencies(terms)
