"""How the keyword index's segments are merged: which ones (`merge_plan`), and how (`commit_merged`: their
postings streamed into one new segment).

Which: a segment of `SETTLED_DOCS` live documents or more is left alone, as
Lucene's TieredMergePolicy leaves alone segments near its maximum merged
segment size (https://lucene.apache.org/core/9_0_0/core/org/apache/lucene/index/TieredMergePolicy.html):
rewriting it for every later ingest would make a one-file ingest pay for the
whole collection. Of the rest, largest first, a segment is left alone while it
holds more than `MERGE_RATIO` times the documents of every smaller segment
together, and the others are merged.
(`SETTLED_DOCS` counts live documents: a settled segment most of whose
chunks were replaced is merged again, and the dead ones dropped.) One ingest's batch segments (similar
sizes) become one, a later small ingest never rewrites the big one under them,
and the number of segments stays logarithmic.

A merge may be cut in `parts`: groups of consecutive segments, each merged on
its own (in a process of its own, `KeywordIndex.merge`), so that the closing
merge of a large ingest uses more than one core. Only a merge of at least
`2 * SETTLED_DOCS` documents per group is cut, so that each group's segment is
settled and no later merge folds the groups together again.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Any

MERGE_RATIO = 2.0         # a segment is left unmerged while it holds over this times all smaller ones together
SETTLED_DOCS = 200_000    # a segment this large (live documents) is never merged again


def merge_plan(segments: Sequence[Any], parts: int = 1,
               settled: int | None = None) -> tuple[list[Any], list[list[Any]]]:
    """The segments left as they are (in their order) and the groups to merge, each of two segments or more
    (in their order): one group, or up to `parts` when each would hold `2 * settled` documents or more.
    `settled`: the live documents of a segment left alone (default SETTLED_DOCS)."""
    if settled is None:
        settled = SETTLED_DOCS
    loose = [s for s in segments if s.doc_count() < settled]
    ordered = sorted(loose, key=lambda s: s.doc_count_all(), reverse=True)
    below = sum(s.doc_count_all() for s in ordered)
    big = 0
    for seg in ordered:
        below -= seg.doc_count_all()
        if seg.doc_count_all() <= MERGE_RATIO * below:
            break
        big += 1
    taken = {id(s) for s in ordered[big:]}
    take = [s for s in segments if id(s) in taken]
    if len(take) < 2:
        return list(segments), []
    total = sum(s.doc_count() for s in take)
    count = max(1, min(parts, total // (2 * settled)))
    groups: list[list[Any]] = [[] for _ in range(count)]
    done = 0
    for seg in take:                     # consecutive runs of about total / count documents each
        groups[min(count - 1, done * count // max(total, 1))].append(seg)
        done += seg.doc_count()
    kept = [s for s in segments if id(s) not in taken]
    for group in groups:
        if len(group) < 2:
            kept.extend(group)
    return kept, [g for g in groups if len(g) >= 2]


def commit_merged(writer: Any, storage: Any, kept: list[Any], take: list[Any]) -> None:
    """Commit `writer` with the segments of `take` (read from `storage`) merged into its new segment beside
    `kept`, the segments its index keeps."""
    policy = _StreamMerge(storage, kept, take)
    try:
        writer.commit(mergetype=policy)
    finally:
        policy.close()


class _StreamMerge:
    """Whoosh merge function: the segments of `take` (read from `storage`) merged into the writer's new
    segment; returns `kept`, the segments the index keeps beside it.

    Their postings are streamed (`_segment_postings`) and k-way merged straight
    into the new segment: each segment's postings are already in (field, term,
    document) order, and its documents keep their order, so nothing needs
    sorting. Whoosh's own `add_reader` re-sorts every posting through its
    external sorting pool, pickling runs to temporary files, which was most of
    a merge's time. The readers stay open until the commit has written the
    segment; `close()` then closes them.
    """

    def __init__(self, storage: Any, kept: list[Any], take: list[Any]) -> None:
        self._storage = storage
        self._kept = kept
        self._take = take
        self._readers: list[Any] = []

    def __call__(self, writer: Any, segments: list[Any]) -> list[Any]:
        from whoosh.reading import SegmentReader

        assert not writer._added, "the merge writer adds no documents of its own"
        fieldnames = set(writer.schema.names())
        streams = []
        for seg in self._take:
            reader = SegmentReader(self._storage, writer.schema, seg)
            self._readers.append(reader)
            base = writer.docnum
            docmap = writer.write_per_doc(fieldnames | {f for f in reader.indexed_field_names()
                                                        if f in writer.schema}, reader)
            streams.append(_segment_postings(reader, writer.schema, base, docmap))
        writer._added = True
        writer.pool.iter_postings = lambda: heapq.merge(*streams)
        return list(self._kept)

    def close(self) -> None:
        for reader in self._readers:
            reader.close()
        self._readers = []


def _segment_postings(reader: Any, schema: Any, base: int, docmap: dict[int, int] | None) -> Iterator[tuple]:
    """A segment's postings of live documents as Whoosh's (field, term bytes, new doc number, weight, value)
    tuples, in order, renumbered as `write_per_doc` placed the documents; read block by block (pinned
    Whoosh 2.7.4's W3 posting blocks) rather than through three matcher calls per posting."""
    from ragtui.stores.raw_postings import term_matchers

    for fieldname, btext, matcher in term_matchers(reader):   # deleted documents are dropped by the docmap below
        if fieldname not in schema:
            continue
        while matcher.is_active():
            matcher._read_ids()
            matcher._read_weights()
            matcher._read_values()
            for doc, weight, value in zip(matcher._ids, matcher._weights, matcher._values, strict=True):
                if docmap is None:
                    yield fieldname, btext, base + doc, weight, value
                elif (new := docmap.get(doc)) is not None:
                    yield fieldname, btext, new, weight, value
            matcher._next_block()
