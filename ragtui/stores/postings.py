"""BM25 scored from Whoosh posting lists read once into numpy arrays, cached per segment.

Why: Whoosh's matcher tree spends ~80% of an OR query walking and decoding
postings in Python (435 ms p50 at 100k chunks: docs/benchmarks.md). Segments are
immutable, so a term's postings in a segment (doc numbers and term
frequencies), and the segment's document lengths, can be decoded once into
compact arrays and scored vectorised for every later query. A commit adds
segments and a merge retires them: only new segments are read, retired ones are
dropped, and deletions (which Whoosh records per segment without rewriting it)
are applied as a mask taken from the reader of the query's generation.

Scoring is Lucene's BM25 (the bm25s "lucene" variant), one formula for terms
and phrases:

    idf   = ln(1 + (N - df + 0.5) / (df + 0.5))
    score = boost * idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))

N, df and avgdl count live documents only, so scores equal a from-scratch
computation over the collection as it is. A phrase (a multi-word synonym) is
scored as one pseudo-term: tf = its exact occurrences, found by checking term
positions in the few documents holding all of its words.

Imported only by the keyword store, inside the function that first scores, so
numpy stays out of the TUI's first frame.
"""

from __future__ import annotations

import bisect
import itertools
import math
import os
import pickle
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

from ragtui import heavy

heavy.load("numpy")  # first, so that this module's imports of it are lookups (ragtui/heavy.py)
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

from ragtui.stores.npy_stream import NpyStream  # noqa: E402
from ragtui.stores.raw_postings import posting_blocks, raw_matcher, term_matchers  # noqa: E402
from ragtui.stores.stored import RawColumn, open_stored_fields, stored_fields  # noqa: E402

Docs = npt.NDArray[np.int32]
Freqs = npt.NDArray[np.float32]
Scores = npt.NDArray[np.float32]
_EMPTY: tuple[Docs, Freqs] = (np.zeros(0, np.int32), np.zeros(0, np.float32))
_INT_SIZE = 4              # Whoosh's pack_uint prefix of a Positions value (its count)
_PROTO2 = b"\x80\x02"     # the pickle protocol header Whoosh writes values with
T = TypeVar("T")


@dataclass(frozen=True)
class Bm25Params:
    """k1 (term-frequency saturation) and b (length normalisation); config keyword.bm25_k1 / keyword.bm25_b."""

    k1: float = 1.2
    b: float = 0.75


@dataclass(frozen=True)
class Clause:
    """One scored part of a query: a term, or a phrase of consecutive terms (already analysed)."""

    terms: tuple[str, ...]
    boost: float = 1.0


# BM25 as Lucene computes it, one function per part (the "lucene" variant of Kamphuis et al., "Which BM25 Do
# You Mean? A Large-Scale Reproducibility Study of Scoring Variants", ECIR 2020; the bm25s package's
# `scoring.py` keeps the same split). Each keeps the order of its float32 operations: scores, and so ties, stay
# bit-for-bit those of the code before the split.

def bm25_idf(n_docs: int, df: int) -> float:
    """ln(1 + (N - df + 0.5) / (df + 0.5)): the Robertson-Sparck Jones weight without relevance information
    (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009) with Lucene's 1 +
    inside the log, so a term in more than half of the documents still weighs more than 0 (Lucene's
    `BM25Similarity.idf`)."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_length_norm(k1: float, b: float, lengths: npt.NDArray[Any], avgdl: float) -> npt.NDArray[Any]:
    """k1 (1 - b + b dl / avgdl) per document: the term-frequency saturation constant scaled by the document's
    length against the mean (Robertson & Zaragoza 2009, length normalisation; b = 0 ignores length, b = 1
    normalises fully)."""
    return k1 * (1.0 - b + b * lengths / avgdl)


def bm25_term_score(weight: np.float32, tf: Freqs, norm: Freqs) -> Freqs:
    """weight x tf / (tf + norm), weight = boost x idf: one term's contribution. Lucene (since 8.0, LUCENE-8563)
    drops the classic (k1 + 1) factor of the numerator, a constant that never changes a ranking."""
    return weight * tf / (tf + norm)


class _Segment:
    """The immutable arrays of one Whoosh segment: document lengths and the postings read so far."""

    def __init__(self, reader: Any, field: str, length_column: str, folder: Path) -> None:
        self.size = int(reader.doc_count_all())
        self.lengths = _lengths(reader, field, length_column, self.size)
        self._field = field
        self._file = PostingsFile.open(folder, reader)
        self._postings: dict[tuple[str, ...], tuple[Docs, Freqs]] = {}
        self._live: tuple[int, npt.NDArray[np.bool_] | None, int, float] | None = None
        self._norm: tuple[tuple[float, Bm25Params] | None, Freqs] = (None, _EMPTY[1])
        self._columns: dict[str, RawColumn | None] = {}   # opened on first use ("_stored": the stored fields)
        self._lock = threading.Lock()

    def stored_fields(self, reader: Any, docs: Sequence[int]) -> list[dict[str, Any]]:
        """The documents' stored fields, read from the segment's file (`stored.py`) or else through Whoosh."""
        raw = self._column("_stored", lambda: open_stored_fields(reader))
        if raw is not None:
            return [stored_fields(value) for value in raw.values(docs)]
        return [reader.stored_fields(doc) for doc in docs]

    def column_values(self, reader: Any, name: str, column: Any, docs: Sequence[int]) -> list[bytes]:
        """The documents' values in a bytes column (b"" where one has none, or the segment lacks the column)."""
        raw = self._column(name, lambda: RawColumn.open(reader, name, column))
        if raw is not None:
            return raw.values(docs)
        if name not in reader.schema or not reader.has_column(name):   # an index from before the column
            return [b""] * len(docs)
        values = reader.column_reader(name, column)
        return [values[doc] for doc in docs]

    def _column(self, name: str, opener: Callable[[], RawColumn | None]) -> RawColumn | None:
        with self._lock:
            if name not in self._columns:
                self._columns[name] = opener()
            return self._columns[name]

    def norm(self, avgdl: float, params: Bm25Params) -> Freqs:
        """k1 (1 - b + b dl / avgdl) per document, kept for the last avgdl (it changes only with a commit)."""
        key = (avgdl, params)
        with self._lock:
            if self._norm[0] != key:
                self._norm = (key, bm25_length_norm(params.k1, params.b, self.lengths, avgdl).astype(np.float32))
            return self._norm[1]

    def live(self, reader: Any) -> tuple[npt.NDArray[np.bool_] | None, int, float]:
        """(live-document mask or None when nothing is deleted, live documents, their total length) for this
        reader's deletions, kept until the next delete (deletions only grow)."""
        deleted = reader.segment().deleted_count() if reader.has_deletions() else 0
        with self._lock:
            if self._live is None or deleted != self._live[0]:
                mask = np.ones(self.size, np.bool_)
                mask[np.fromiter(reader.segment().deleted_docs(), np.int64)] = False
                self._live = (deleted, mask if deleted else None, int(mask.sum()), float(self.lengths[mask].sum()))
            return self._live[1:]

    def postings(self, reader: Any, terms: tuple[str, ...]) -> tuple[Docs, Freqs]:
        """(doc numbers ascending, term frequencies) of a term or a phrase, deleted documents included."""
        with self._lock:
            found = self._postings.get(terms)
        if found is None:
            if len(terms) > 1:
                found = self._phrase(reader, terms)
            elif self._file is not None:
                found = self._file.postings(terms[0])
            else:
                found = _read_term(reader, self._field, terms[0])
            with self._lock:
                self._postings[terms] = found
        return found

    def _phrase(self, reader: Any, terms: tuple[str, ...]) -> tuple[Docs, Freqs]:
        """Documents holding every word, then the exact occurrences from the words' positions there."""
        candidates = _intersection([self.postings(reader, (term,))[0] for term in terms])
        if not len(candidates):
            return _EMPTY
        n = np.int64(len(candidates))
        starts: npt.NDArray[np.int64] | None = None
        for offset, term in enumerate(terms):
            found = self._file.positions(term, candidates) if self._file is not None else None
            doc_index, positions = found if found is not None else _positions(reader, self._field, term, candidates)
            keys = (positions - offset) * n + doc_index     # unique per (document, phrase start)
            starts = keys if starts is None else np.intersect1d(starts, keys, assume_unique=True)
            if not len(starts):
                return _EMPTY
        assert starts is not None
        freqs = np.bincount(starts % n, minlength=len(candidates)).astype(np.float32)
        return candidates[freqs > 0], freqs[freqs > 0]


class PostingsFile:
    """All of one segment's postings of the text field in CSR arrays, memory-mapped from `.npy` files.

    Why: decoding a term's postings from Whoosh costs ~0.1 ms per 1,000
    postings, so the first query using common words on 100k chunks would
    spend hundreds of ms there. `write()` decodes a whole segment once (at
    the end of an ingest) into sorted terms, offsets, doc numbers and
    frequencies; later a term is a binary search and a slice. Terms are one
    UTF-8 blob with offsets (in Whoosh's byte order), so one very long token
    cannot widen every entry. The files are
    named after the segment (MAIN_<id>.bm25_*.npy), so Whoosh deletes them
    with the segment's own files when a merge retires it. The terms file is
    renamed into place last: a segment without it is read from Whoosh.

    It also holds every posting's term positions (reading them
    from Whoosh's blocks for phrase synonyms was ~2/3 of the keyword leg's
    p95 at 100k chunks). A posting's frequency is its count of positions, so
    one flat array of absolute positions in posting order (uint16 while every
    position fits, else int32) and each term's start in it suffice. A set
    written before positions existed has neither part: its phrases keep
    Whoosh's path.
    """

    PARTS = ("offsets", "docs", "freqs", "position_starts", "positions", "term_offsets",
             "terms")   # "terms" last: it marks a complete set
    OPTIONAL = frozenset({"position_starts", "positions"})

    def __init__(self, arrays: dict[str, Any]) -> None:
        arrays = {part: np.asarray(array) for part, array in arrays.items()}   # plain views of the maps: slicing
        self._terms = _Terms(arrays["terms"], arrays["term_offsets"])          # a memmap made a term lookup 3x dearer
        self._offsets = arrays["offsets"]
        self._docs = arrays["docs"]
        self._freqs = arrays["freqs"]
        self._position_starts = arrays.get("position_starts")
        self._positions = arrays.get("positions")

    @classmethod
    def paths(cls, folder: Path, reader: Any) -> dict[str, Path]:
        return {part: folder / f"{reader.segment().segment_id()}.bm25_{part}.npy" for part in cls.PARTS}

    @classmethod
    def open(cls, folder: Path, reader: Any) -> PostingsFile | None:
        paths = cls.paths(folder, reader)
        if not paths["terms"].exists():
            return None
        try:
            return cls({part: np.load(path, mmap_mode="r") for part, path in paths.items()
                        if part not in cls.OPTIONAL or path.exists()})
        except (OSError, ValueError):     # a retired segment's files deleted under us: read from Whoosh
            return None

    @classmethod
    def write(cls, folder: Path, reader: Any, field: str) -> None:
        """Decode every term of the segment's field and save the arrays (tmp files renamed into place).

        Positions are left out (phrases then read Whoosh) if the field keeps none, or if a posting's
        weight is not its count of positions (a field boost), so the file never answers inexactly. The big
        arrays go to disk term by term (`NpyStream`): memory holds one term's postings, not the segment's.
        """
        paths = cls.paths(folder, reader)
        terms: list[bytes] = []
        sizes: list[int] = []
        position_sizes: list[int] | None = [] if reader.schema[field].format.supports("positions") else None
        widest = 0
        with NpyStream(folder, paths["docs"].name, np.int32) as docs, \
                NpyStream(folder, paths["freqs"].name, np.float32) as freqs, \
                NpyStream(folder, paths["positions"].name, np.int32) as positions:
            for _, term, matcher in term_matchers(reader, field):
                blocks = list(posting_blocks(matcher))
                term_docs = np.concatenate([ids for ids, _, _ in blocks]).astype(np.int32) if blocks else _EMPTY[0]
                term_freqs = np.concatenate([w for _, w, _ in blocks]).astype(np.float32) if blocks else _EMPTY[1]
                terms.append(term)
                sizes.append(len(term_docs))
                docs.append(term_docs)
                freqs.append(term_freqs)
                if position_sizes is not None:
                    counts, flat = _decode_positions([v for _, _, values in blocks for v in values])
                    if np.array_equal(counts, term_freqs):
                        positions.append(flat)
                        position_sizes.append(len(flat))
                        widest = max(widest, int(flat.max()) if len(flat) else 0)
                    else:
                        position_sizes = None
            small: dict[str, npt.NDArray[Any]] = {
                "offsets": _offsets(sizes), "term_offsets": _offsets([len(t) for t in terms]),
                "terms": np.frombuffer(b"".join(terms), np.uint8)}
            if position_sizes is not None:
                small["position_starts"] = _offsets(position_sizes)
            streamed: dict[str, tuple[NpyStream, npt.DTypeLike | None]] = {"docs": (docs, None),
                                                                            "freqs": (freqs, None)}
            if position_sizes is not None:
                streamed["positions"] = (positions, np.uint16 if widest <= np.iinfo(np.uint16).max else None)
            for part, path in paths.items():        # in PARTS order: "terms", the mark of a complete set, last
                tmp = path.with_name(f".{path.name}.tmp")     # a dot name: Whoosh's file cleaner skips it
                if part in streamed:
                    stream, dtype = streamed[part]
                    stream.finish(tmp, dtype)
                elif part in small:
                    with open(tmp, "wb") as out:
                        np.save(out, small[part])
                else:
                    path.unlink(missing_ok=True)
                    continue
                os.replace(tmp, path)

    def postings(self, term: str) -> tuple[Docs, Freqs]:
        i = self._index(term)
        if i is None:
            return _EMPTY
        start, end = int(self._offsets[i]), int(self._offsets[i + 1])
        return np.asarray(self._docs[start:end]), np.asarray(self._freqs[start:end])

    def positions(self, term: str, docs: Docs) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
        """As `_positions` (flat index into `docs`, position), from the file; None where it has no positions."""
        if self._positions is None or self._position_starts is None:
            return None
        i = self._index(term)
        if i is None:
            return None
        start, end = int(self._offsets[i]), int(self._offsets[i + 1])
        term_docs = np.asarray(self._docs[start:end])
        counts_all = np.asarray(self._freqs[start:end]).astype(np.int64)
        at = np.searchsorted(term_docs, docs)
        begins = np.cumsum(counts_all) - counts_all            # each posting's first position in the term's run
        counts = counts_all[at]
        ends = np.cumsum(counts)
        within = np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64) - np.repeat(ends - counts, counts)
        gather = np.repeat(begins[at], counts) + within
        run = self._positions[int(self._position_starts[i]):int(self._position_starts[i + 1])]
        doc_index = np.repeat(np.arange(len(docs), dtype=np.int64), counts)
        return doc_index, np.asarray(run[gather]).astype(np.int64)

    def _index(self, term: str) -> int | None:
        key = term.encode("utf-8")
        i = bisect.bisect_left(self._terms, key)
        return i if i < len(self._terms) and self._terms[i] == key else None


class _Terms(Sequence[bytes]):
    """The sorted terms of a postings file as a sequence of bytes, read from the blob on demand (for bisect)."""

    def __init__(self, blob: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64]) -> None:
        self._blob = blob
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, i: int) -> bytes: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[bytes]: ...
    def __getitem__(self, i: int | slice) -> bytes | Sequence[bytes]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._blob[int(self._offsets[i]):int(self._offsets[i + 1])].tobytes()


def _offsets(sizes: list[int]) -> npt.NDArray[np.int64]:
    out = np.zeros(len(sizes) + 1, np.int64)
    out[1:] = np.cumsum(sizes)
    return out


class PostingCache:
    """The segment arrays of one Whoosh index, shared by every generation that still holds the segment."""

    def __init__(self, folder: Path, field: str, length_column: str, params: Bm25Params) -> None:
        self.folder = folder
        self.field = field
        self.length_column = length_column
        self.params = params
        self._segments: dict[str, _Segment] = {}
        self._lock = threading.Lock()

    def snapshot(self, reader: Any) -> Bm25Snapshot:
        """A scorer over exactly this reader's generation; segments a merge retired leave the cache."""
        leaves = [(leaf, int(offset)) for leaf, offset in reader.leaf_readers() if leaf.segment() is not None]
        ids = [leaf.segment().segment_id() for leaf, _ in leaves]
        with self._lock:
            for gone in set(self._segments) - set(ids):
                del self._segments[gone]
            missing = [(sid, leaf) for sid, (leaf, _) in zip(ids, leaves, strict=True) if sid not in self._segments]
        for sid, leaf in missing:
            segment = _Segment(leaf, self.field, self.length_column, self.folder)
            with self._lock:
                self._segments.setdefault(sid, segment)
        with self._lock:
            parts = [_Part(sid, self._segments[sid], leaf, offset)
                     for sid, (leaf, offset) in zip(ids, leaves, strict=True)]
        return Bm25Snapshot(parts, self.params)

    def segment_ids(self) -> set[str]:
        with self._lock:
            return set(self._segments)


@dataclass
class _Part:
    segment_id: str
    segment: _Segment
    reader: Any
    offset: int


class Bm25Snapshot:
    """BM25 over one generation of the index: live documents only, global doc numbers of the reader."""

    def __init__(self, parts: list[_Part], params: Bm25Params) -> None:
        self._parts = parts
        self._offsets = [p.offset for p in parts]
        self._params = params
        stats = [p.segment.live(p.reader) for p in parts]
        self._live = [live for live, _, _ in stats]
        self.n_docs = sum(count for _, count, _ in stats)
        self.avgdl = sum(total for _, _, total in stats) / self.n_docs if self.n_docs else 0.0

    def locate(self, doc: int) -> tuple[str, int]:
        """(segment id, doc number in the segment) of a global doc number: a key that outlives the generation."""
        part = self._part(doc)
        return part.segment_id, doc - part.offset

    def stored_fields(self, docs: Sequence[int]) -> list[dict[str, Any]]:
        """The stored fields of global doc numbers, in order, each segment's read together."""
        return self._per_part(docs, lambda part, local: part.segment.stored_fields(part.reader, local))

    def column_values(self, docs: Sequence[int], name: str, column: Any) -> list[bytes]:
        """The values of global doc numbers in a bytes column, in order, each segment's read together."""
        return self._per_part(docs, lambda part, local: part.segment.column_values(part.reader, name, column, local))

    def _per_part(self, docs: Sequence[int], read: Callable[[_Part, list[int]], list[T]]) -> list[T]:
        by_part: dict[int, list[int]] = {}
        for i, doc in enumerate(docs):
            by_part.setdefault(self._part_index(doc), []).append(i)
        values: dict[int, T] = {}
        for index, positions in by_part.items():
            part = self._parts[index]
            values.update(zip(positions, read(part, [docs[i] - part.offset for i in positions]), strict=True))
        return [values[i] for i in range(len(docs))]

    def _part(self, doc: int) -> _Part:
        return self._parts[self._part_index(doc)]

    def _part_index(self, doc: int) -> int:
        return bisect.bisect_right(self._offsets, doc) - 1

    def postings_count(self, terms: tuple[str, ...]) -> int:
        """Postings of the term (or phrase) in every segment, deleted documents' included (Whoosh's doc frequency)."""
        return sum(len(p.segment.postings(p.reader, terms)[0]) for p in self._parts)

    def df(self, terms: tuple[str, ...]) -> int:
        """Live documents holding the term (or the phrase)."""
        return sum(self._live_count(i, p.segment.postings(p.reader, terms)[0]) for i, p in enumerate(self._parts))

    def idf(self, terms: tuple[str, ...]) -> float:
        return bm25_idf(self.n_docs, self.df(terms))

    def holding(self, field: str, values: Iterable[str]) -> list[npt.NDArray[np.bool_]]:
        """Per segment, which documents have one of these values in an ID field (`source`, `chunk_id`): the
        `allowed` mask of a filtered search."""
        wanted = list(dict.fromkeys(values))
        masks = []
        for part in self._parts:
            mask = np.zeros(part.segment.size, np.bool_)
            for value in wanted:
                docs, _ = _read_term(part.reader, field, value)
                mask[docs] = True
            masks.append(mask)
        return masks

    def search(self, clauses: Sequence[Clause], top_k: int, *, require_all: bool,
               allowed: Sequence[npt.NDArray[np.bool_]] | None = None) -> list[tuple[int, float]]:
        """(global doc number, score) best first, ties by doc number; AND of the clauses or their weighted OR.

        `allowed` (from `holding`) keeps the search to those documents; the IDF stays the whole index's."""
        clauses = [c for c in clauses if c.terms]
        if not clauses or not self.n_docs or top_k <= 0:
            return []
        weights = [c.boost * self.idf(c.terms) for c in clauses]
        docs_parts: list[npt.NDArray[np.int64]] = []
        score_parts: list[Scores] = []
        for i, (part, live) in enumerate(zip(self._parts, self._live, strict=True)):
            if allowed is not None:
                live = allowed[i] if live is None else live & allowed[i]
            scored = self._segment_scores(part, live, clauses, weights, require_all)
            if scored is None:
                continue
            docs, scores = _top(*scored, top_k)
            docs_parts.append(docs + part.offset)
            score_parts.append(scores)
        if not docs_parts:
            return []
        docs, scores = _top(np.concatenate(docs_parts), np.concatenate(score_parts), top_k)
        return list(zip(docs.tolist(), scores.tolist(), strict=True))

    def _segment_scores(self, part: _Part, live: npt.NDArray[np.bool_] | None, clauses: Sequence[Clause],
                        weights: list[float], require_all: bool) -> tuple[npt.NDArray[np.int64], Scores] | None:
        """(doc numbers, scores) of the segment's matching live documents, in float32 (ample for ranking,
        and half the memory traffic of float64)."""
        postings = [part.segment.postings(part.reader, c.terms) for c in clauses]
        norm = part.segment.norm(self.avgdl, self._params)
        if require_all:
            docs = _intersection([d for d, _ in postings])
            if live is not None:
                docs = docs[live[docs]]
            if not len(docs):
                return None
            scores = np.zeros(len(docs), np.float32)
            for (d, f), w in zip(postings, weights, strict=True):
                tf = f[np.searchsorted(d, docs)]
                scores += bm25_term_score(np.float32(w), tf, norm[docs])
            return docs.astype(np.int64), scores
        acc = np.zeros(part.segment.size, np.float32)
        for (d, f), w in zip(postings, weights, strict=True):
            if len(d):
                acc[d] += bm25_term_score(np.float32(w), f, norm[d])
        if live is not None:
            acc[~live] = 0.0
        hit = np.flatnonzero(acc)
        return (hit, acc[hit]) if len(hit) else None

    def _live_count(self, i: int, docs: Docs) -> int:
        live = self._live[i]
        return int(live[docs].sum()) if live is not None else len(docs)


def _intersection(lists: list[Docs]) -> Docs:
    """Doc numbers in every list (each ascending, unique): the shortest list, narrowed by a binary search
    in each longer one (the AND tier's lists differ by orders of magnitude; `intersect1d` sorts both)."""
    ordered = sorted(lists, key=len)
    docs = ordered[0]
    for other in ordered[1:]:
        if not len(other):
            return other
        at = np.searchsorted(other, docs)
        at[at == len(other)] = 0
        docs = docs[other[at] == docs]
    return docs


def _top(docs: npt.NDArray[np.int64], scores: Scores, k: int) -> tuple[npt.NDArray[np.int64], Scores]:
    """The k best by score, ties broken by the lower doc number (deterministic across segments)."""
    if len(scores) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth
        docs, scores = docs[keep], scores[keep]
    order = np.lexsort((docs, -scores))[:k]
    return docs[order], scores[order]


def _lengths(reader: Any, field: str, length_column: str, size: int) -> Freqs:
    """Exact token counts from the store's length column; Whoosh's one-byte length where a document has none.

    The store writes the exact count of analysed tokens with every document;
    documents written before that column existed fall back to Whoosh's own
    field length (exact to 10 tokens, within ~3.5% above).
    """
    lengths = np.zeros(size, np.float32)
    if length_column in reader.schema and reader.has_column(length_column):
        column = reader.column_reader(length_column, translate=False)
        stored = np.frombuffer(column._dbfile.get(column._basepos, column._count * column._fixedlen), ">u4")
        lengths[:len(stored)] = stored
    for doc in np.flatnonzero(lengths == 0).tolist():
        lengths[doc] = reader.doc_field_length(doc, field, 0) or 0
    return lengths


def _read_term(reader: Any, field: str, term: str) -> tuple[Docs, Freqs]:
    """A term's postings in one segment: doc numbers ascending and term frequencies."""
    if (field, term) not in reader:
        return _EMPTY
    blocks = list(posting_blocks(raw_matcher(reader, field, term)))
    if not blocks:
        return _EMPTY
    return (np.concatenate([ids for ids, _, _ in blocks]).astype(np.int32),
            np.concatenate([weights for _, weights, _ in blocks]).astype(np.float32))


def _positions(reader: Any, field: str, term: str, docs: Docs) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The term's positions in `docs` (ascending, all holding the term) as flat (index into `docs`, position).

    A block is read only when it holds one of `docs` (its header gives its last doc number), so a
    phrase of a rare and a common word does not unpickle the common word's whole posting list, and
    the wanted values are decoded together (phrase synonyms otherwise made the keyword leg's p95 at
    100k chunks).
    """
    matcher = raw_matcher(reader, field, term)
    wanted = docs.tolist()
    values: list[bytes] = []
    while len(values) < len(wanted) and matcher.is_active():
        last = matcher.block_max_id()
        if last >= wanted[len(values)]:
            matcher._read_data()
            raw_ids, _, block_values = matcher._data
            ids = np.cumsum(np.asarray(raw_ids, np.int64))
            here = wanted[len(values):bisect.bisect_right(wanted, last)]
            values.extend(block_values[i] for i in np.searchsorted(ids, here).tolist())
        matcher._next_block()
    lengths, positions = _decode_positions(values)
    return np.repeat(np.arange(len(lengths), dtype=np.int64), lengths), positions


def _decode_positions(values: list[bytes]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(position count per value, all absolute positions in value order) of Whoosh Positions values."""
    deltas = _position_deltas(values) if values else []
    lengths = np.fromiter(map(len, deltas), np.int64, len(deltas))
    flat = np.fromiter(itertools.chain.from_iterable(deltas), np.int64, int(lengths.sum()))
    running = np.cumsum(flat)     # deltas restart per document: take off the running total before each
    ends = np.cumsum(lengths)
    before = np.concatenate(([0], running[ends[:-1] - 1])) if len(ends) else ends
    return lengths, running - np.repeat(before, lengths)


def _position_deltas(values: list[bytes]) -> list[list[int]]:
    """The position deltas of many Whoosh Positions values, unpickled in one call.

    A value is a 4-byte count and a protocol-2 pickle of the delta list, its
    final STOP often cut (Whoosh's own decoder re-adds it). The pickles' bodies
    (each builds one list) are joined between a MARK and a LIST opcode, so C
    does the work of one `decode_positions` call per document at once.
    """
    bodies = []
    for value in values:
        body = value[_INT_SIZE:]
        body = body[2:] if body.startswith(_PROTO2) else body
        bodies.append(body[:-1] if body.endswith(b".") else body)
    decoded: list[list[int]] = pickle.loads(_PROTO2 + b"(" + b"".join(bodies) + b"l.")
    return decoded
