"""The keyword index's write path (issue 14's build): batch deletes through one searcher, and the streamed
merge, which must write exactly the segment Whoosh's own merge writes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ragtui.stores.keyword import KeywordIndex
from tests.collection_builder import make_chunks
from tests.stores.test_postings import corpus


def batches(index: KeywordIndex, seeds: range) -> None:
    """One commit (one segment) per seed, as an ingest's batches write them."""
    for seed in seeds:
        files = corpus(seed, files=12)
        index.replace_sources([], make_chunks("c", files))


def whoosh_view(folder: Path) -> dict[str, Any]:
    """Everything a merge must carry over, read through Whoosh: documents in order, every term's postings
    (positions for the text field), term statistics, field lengths and the length column."""
    from whoosh import index

    with index.open_dir(str(folder)).reader() as reader:
        postings = {}
        stats = {}
        for field, term in reader.all_terms():
            matcher = reader.postings(field, term)
            postings[field, term] = list(matcher.items_as("positions") if field == "text" else matcher.all_ids())
            info = reader.term_info(field, term)
            stats[field, term] = (info.doc_frequency(), info.weight(), info.min_length(), info.max_length(),
                                  info.max_weight())
        docs = list(reader.iter_docs())
        return {"segments": len(reader.leaf_readers()), "docs": docs, "postings": postings, "stats": stats,
                "lengths": [reader.doc_field_length(d, "text") for d in range(reader.doc_count_all())],
                "length_column": list(reader.column_reader("length"))}


def test_streamed_merge_writes_what_whoosh_merge_writes(tmp_path: Path) -> None:
    ours = KeywordIndex(tmp_path / "ours")
    batches(ours, range(5))
    deleted = ours.delete_sources([f"f1-{i}.txt" for i in range(0, 12, 3)] + ["f3-5.txt"])
    assert deleted == 15
    ours.close()
    shutil.copytree(tmp_path / "ours", tmp_path / "whoosh")
    before = whoosh_view(tmp_path / "ours")
    assert before["segments"] == 5

    assert KeywordIndex(tmp_path / "ours").merge() == 1
    from whoosh import index

    writer = index.open_dir(str(tmp_path / "whoosh")).writer()
    writer.commit(optimize=True)                  # Whoosh's own merge of every segment through its pool

    merged, reference = whoosh_view(tmp_path / "ours"), whoosh_view(tmp_path / "whoosh")
    assert merged["segments"] == reference["segments"] == 1
    assert merged == reference
    assert len(merged["docs"]) == len(before["docs"]) == 5 * 12 * 3 - 15
    assert [fields for _, fields in merged["docs"]] == [fields for _, fields in before["docs"]]


def test_batch_deletes_replace_exactly_the_named_sources(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "kw")
    batches(index, range(3))
    ids = index.ids()
    gone = [f"f0-{i}.txt" for i in range(12)] + [f"f2-{i}.txt" for i in range(6)]
    replacement = make_chunks("c", {"f0-0.txt": ["pump valve replaced"]})
    assert index.replace_sources(gone, replacement) == 1
    kept = {i for i in ids if not any(i in {c.id for c in make_chunks("c", {s: ["x"] * 3})} for s in gone)}
    assert index.ids() == kept | {c.id for c in replacement}
    assert index.delete_ids(sorted(kept)[:5]) == 5
    assert index.ids() == (kept - set(sorted(kept)[:5])) | {c.id for c in replacement}


def test_the_merged_segments_postings_file_holds_every_text_term_as_whoosh_reads_it(tmp_path: Path) -> None:
    """The postings file written at merge time (read in one pass over the terms file) holds exactly the text
    field's terms, each with the doc numbers, frequencies and positions Whoosh's own matcher gives: no term of
    another field, none missing, in the segment that the merge left."""
    from whoosh import index as whoosh_index

    from ragtui.stores.postings import PostingsFile

    ours = KeywordIndex(tmp_path / "kw")
    batches(ours, range(4))
    ours.delete_sources(["f2-1.txt", "f0-7.txt"])
    assert ours.merge() == 1
    ours.close()
    with whoosh_index.open_dir(str(tmp_path / "kw")).reader() as reader:
        [(leaf, _)] = reader.leaf_readers()
        found = PostingsFile.open(tmp_path / "kw", leaf)
        assert found is not None
        terms = [bytes(t) for t in found._terms]
        text_terms = list(leaf.lexicon("text"))
        assert terms == text_terms and len({f for f, _ in leaf.all_terms()}) > 1
        for raw in text_terms:
            term = raw.decode("utf-8")
            expected = list(leaf.postings("text", term).items_as("positions"))
            docs, freqs = found.postings(term)
            pairs = list(zip(docs.tolist(), freqs.astype(int).tolist(), strict=True))
            assert [(int(d), len(p)) for d, p in expected] == pairs
            at = found.positions(term, docs)
            assert at is not None
            index, positions = at
            assert [p for _, ps in expected for p in ps] == positions.tolist()
            assert index.tolist() == [i for i, (_, ps) in enumerate(expected) for _ in ps]


class _Segment:
    def __init__(self, name: str, docs: int, deleted: int = 0) -> None:
        self.name, self.docs, self.deleted = name, docs, deleted

    def doc_count(self) -> int:
        return self.docs - self.deleted

    def doc_count_all(self) -> int:
        return self.docs


def _names(segments: list[Any]) -> list[str]:
    return [s.name for s in segments]


def test_the_merge_plan_leaves_settled_segments_alone_and_cuts_only_merges_of_settled_size() -> None:
    from functools import partial

    from ragtui.stores import keyword_merge

    merge_plan = partial(keyword_merge.merge_plan, settled=100)
    halves = [_Segment("h1", 500), _Segment("h2", 480)]
    batches = [_Segment(f"b{i}", 20) for i in range(30)]
    kept, groups = merge_plan([*halves, _Segment("small", 3)], parts=2)
    assert _names(kept) == ["h1", "h2", "small"] and groups == []      # nothing to merge beside two settled
    kept, groups = merge_plan([*halves, *batches[:9]], parts=2)
    assert _names(kept) == ["h1", "h2"] and [_names(g) for g in groups] == [_names(batches[:9])]  # 180: one group
    more = batches + [_Segment(f"c{i}", 20) for i in range(10)]           # 800 documents
    assert [len(g) for g in merge_plan(more, parts=8)[1]] == [10, 10, 10, 10]    # groups of 200 (2 x settled)
    kept, groups = merge_plan(more, parts=2)
    assert kept == [] and [len(g) for g in groups] == [20, 20]
    assert _names(groups[0]) == _names(batches[:20])                      # consecutive runs, in index order
    assert [len(g) for g in merge_plan(more, parts=1)[1]] == [40]
    shrunk = _Segment("h3", 100, deleted=60)                              # settled no more: 40 live
    kept, groups = merge_plan([*halves, shrunk, *batches[:3]], parts=2)
    assert _names(kept) == ["h1", "h2"] and _names(groups[0]) == ["h3", "b0", "b1", "b2"]


def test_a_merge_cut_in_groups_merged_in_processes_reads_as_the_one_segment_merge(tmp_path: Path) -> None:
    """An ingest's merge apart, cut in two groups, each merged by a process of its own while the merge's process
    holds the lock, committed in one commit: the same documents in the same order, the same BM25 scores as one
    merge of them all, nothing left beside the index, and the two settled segments left alone by the next
    ingest's merge."""
    from ragtui.ingest.merging import merge_apart
    from ragtui.stores.postings import Clause
    from tests.stores.test_postings import searched

    ours = KeywordIndex(tmp_path / "kw")
    batches(ours, range(6))                                  # 6 segments of 36 chunks
    ours.delete_sources(["f1-2.txt", "f4-0.txt"])
    ours.close()
    shutil.copytree(tmp_path / "kw", tmp_path / "one")
    one = KeywordIndex(tmp_path / "one")
    assert one.merge() == 1

    assert merge_apart([tmp_path / "kw"], parts=2, settled=40) == [2]
    cut = KeywordIndex(tmp_path / "kw")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kw", "one"]
    assert whoosh_view(tmp_path / "kw")["docs"] == whoosh_view(tmp_path / "one")["docs"]
    clauses = [Clause(("pump",)), Clause(("valve",)), Clause(("steel", "joint"), boost=2.0)]
    for require_all in (False, True):
        assert searched(cut, clauses, require_all=require_all) == \
            pytest.approx(searched(one, clauses, require_all=require_all))
    settled = {leaf.segment().segment_id() for leaf, _ in cut.searcher().reader().leaf_readers()}
    cut.replace_sources([], make_chunks("c", corpus(40, files=2)))
    assert merge_apart([tmp_path / "kw"], parts=2, settled=40) == [3]
    assert settled <= {leaf.segment().segment_id() for leaf, _ in cut.searcher().reader().leaf_readers()}


def test_a_failed_group_leaves_the_index_as_it_was_and_unlocked(tmp_path: Path) -> None:
    from ragtui.errors import RagtuiError
    from ragtui.ingest.merging import merge_groups

    index = KeywordIndex(tmp_path / "kw")
    batches(index, range(6))
    ids = index.ids()

    def one_group_fails(groups: list[tuple[list[str], Path]]) -> None:
        (first, out), *rest = groups
        merge_groups(str(tmp_path / "kw"), [([*first, "MAIN_gone"], out), *rest])

    with pytest.raises(RagtuiError, match="no longer holds the segments"):
        index.merge(parts=2, build=one_group_fails, settled=40)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kw"]
    assert index.ids() == ids and len(index.searcher().reader().leaf_readers()) == 6
    assert index.merge() == 1 and index.ids() == ids
