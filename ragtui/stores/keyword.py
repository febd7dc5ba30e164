"""The keyword index of a collection: Whoosh with ragtui's analyzer (`analysis`), scored by BM25 from postings.

Whoosh is the index of record: analysis, stored text and metadata, adds,
replacements and deletes. Queries are scored by `postings.Bm25Snapshot` from
per-segment posting arrays rather than Whoosh's matcher tree (which spent most
of an OR query decoding postings in Python: docs/benchmarks.md). Each
chunk is analysed once, here, and handed to Whoosh as its token list (Whoosh
then skips its analyser), so the exact token count is known and stored in the
`length` column for BM25's length normalisation.

Each chunk's id, text and metadata are one uncompressed pickle in the
`chunk` column, read per hit with one `pread` (`stored.py`): Whoosh's stored
fields are zlib-compressed pickles, and their decoding was most of the AND
tier's time at 100k chunks. Documents written before the column
keep their text and metadata in the stored fields and are read from there.

Writes commit new segments without merging, so a batch costs the same however
large the index is; `merge()` (end of an ingest) folds the small segments
together (`keyword_merge.py`; a large merge is cut in groups that processes
merge at once). One searcher is kept open and refreshed only when a writer has
committed: opening a searcher reads every segment's term and length data, too
costly to repeat per query.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtui import heavy
from ragtui.errors import RagtuiError
from ragtui.model.chunks import Chunk, ChunkMeta

if TYPE_CHECKING:
    from ragtui.stores.postings import Bm25Params, Bm25Snapshot, Clause, PostingCache

# What `KeywordIndex.merge` hands a merge cut in groups: each group's segment ids and the folder to merge it into.
BuildGroups = Callable[[list[tuple[list[str], Path]]], None]

WRITE_LOCK_TIMEOUT = 30.0
LENGTH = "length"   # column of exact analysed-token counts per chunk (BM25 length normalisation)
CHUNK = "chunk"     # column of each chunk's (id, text, metadata), pickled (the stored fields keep id and source)
CHUNKS_CACHED = 8192  # decoded hits kept per index (~25 MB): a chunk's read costs ~9 us (cold ~20) and never changes
# Process-wide, like the folders it guards: whoosh's create_in is not safe against a second thread
# (of any workspace) creating the same index.
_OPEN_LOCK = threading.Lock()


def _schema() -> Any:
    from whoosh.fields import ID, STORED, TEXT, Schema

    from ragtui.stores.analysis import analyzer

    return Schema(
        chunk_id=ID(stored=True, unique=True),
        source=ID(stored=True),
        text=TEXT(analyzer=analyzer(), stored=True),
        meta=STORED,
        **{LENGTH: _length_field(), CHUNK: _chunk_field()},
    )


def _storage(path: Path) -> Any:
    """The index folder's Whoosh storage, reading files with plain reads instead of mmap.

    Why: with mmap, Whoosh wraps each file of a compound segment in
    a BufferFile whose BytesIO copies the whole file, so opening a searcher on
    110k chunks copied the postings (~185 MB) and, on the first stored-field
    read, the stored column (~117 MB) into the heap, besides touching every
    page of the mapping: ~700 MB of a query process's RSS. Plain reads copy
    only what is read (the postings are scored from `postings.PostingsFile`).
    """
    from whoosh.filedb.filestore import FileStorage

    return FileStorage(str(path), supports_mmap=False)


def _length_field() -> Any:
    from whoosh.columns import NumericColumn
    from whoosh.fields import COLUMN

    return COLUMN(NumericColumn("I"))


def _chunk_field() -> Any:
    from whoosh.fields import COLUMN

    return COLUMN(_chunk_column())


def _chunk_column() -> Any:
    from whoosh.columns import VarBytesColumn

    return VarBytesColumn()


class _FieldLengths:
    """The per-document reader a Whoosh writer asks for every posting's field length as it writes a segment's
    postings, with each field's length bytes read from the new segment once instead of per posting.

    Whoosh 2.7.4 (`FieldWriter.add_postings`) reads the length with a seek and a one-byte read per posting
    (plain reads here: `_storage`), which was a tenth of a build's CPU; the values are the same bytes,
    decoded as `W3PerDocReader.doc_field_length` decodes them.
    """

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._bytes: dict[str, bytes | None] = {}

    def doc_field_length(self, docnum: int, fieldname: str, default: int = 0) -> int | None:
        from whoosh.util.numeric import byte_to_length

        if fieldname not in self._bytes:
            self._bytes[fieldname] = self._read(fieldname)
        lengths = self._bytes[fieldname]
        if lengths is None:
            return default
        lbyte = lengths[docnum] if docnum < len(lengths) else 0
        return byte_to_length(lbyte) if lbyte else None

    def _read(self, fieldname: str) -> bytes | None:
        from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield

        column = self._reader._cached_reader(_lenfield(fieldname), LENGTHS_COLUMN)
        return None if column is None else bytes(column._dbfile.get(column._basepos, column._count))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)


def _reading_lengths_once(writer: Any) -> Any:
    """The writer, its segment's postings written with `_FieldLengths`."""
    made = writer.per_document_reader
    writer.per_document_reader = lambda: _FieldLengths(made())
    return writer


def _delete_terms(writer: Any, field: str, values: Iterable[str]) -> int:
    """Delete the documents holding any of `values` in `field` through one searcher for them all.

    Whoosh's `delete_by_term` without a searcher opens a reader of every
    segment per call (with mmap storage that copied each segment's terms and
    postings files into memory): one delete per source made a batch's cost
    grow with the whole index (a 100k-chunk build slowed from 4 to 25 CPU-s a
    batch).
    """
    values = list(values)
    if not values:
        return 0
    with writer.searcher() as searcher:
        return sum(writer.delete_by_term(field, v, searcher=searcher) for v in values)


class KeywordIndexDamaged(RagtuiError):
    """The index's folder holds segments but no readable table of contents; left as it is."""


class KeywordIndex:
    FIELD = "text"

    def __init__(self, path: Path, bm25: Bm25Params | None = None) -> None:
        heavy.load("whoosh")      # numpy (the postings) and whoosh, one thread at a time
        self.path = path
        with _OPEN_LOCK:
            storage = _storage(path)
            if storage.index_exists():
                self._ix = storage.open_index()
            elif path.is_dir() and any(name.startswith("MAIN_") and name != "MAIN_WRITELOCK"
                                       for name in storage.list()):
                # Segments without a table of contents: creating an index here would empty it for good.
                raise KeywordIndexDamaged(f"segments without their table of contents (_MAIN_<n>.toc) in {path}")
            else:
                path.mkdir(parents=True, exist_ok=True)
                self._ix = storage.create_index(_schema())
        self._analyzer = self._ix.schema[self.FIELD].analyzer
        self._lock = threading.RLock()
        self._searcher: Any = None
        self._bm25 = bm25
        self._postings: PostingCache | None = None
        self._chunks: OrderedDict[tuple[str, int], Chunk] = OrderedDict()

    # --- reading -------------------------------------------------------------

    def searcher(self) -> Any:
        """The shared searcher, refreshed when the index changed on disk (callers hold no reference long)."""
        with self._lock:
            if self._searcher is None:
                self._searcher = self._ix.searcher()
            elif not self._searcher.up_to_date():
                self._searcher = self._searcher.refresh()
            return self._searcher

    @property
    def outdated(self) -> bool:
        """The index was built with an older analyzer (its schema keeps the one it was built with)."""
        from ragtui.stores.analysis import analyzer

        return bool(self._analyzer != analyzer())

    def rebuild(self) -> None:
        """Start over empty with the current analyzer; the caller refills it from the records."""
        with self._lock, _OPEN_LOCK:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None
            self._postings = None
            self._chunks.clear()
            self._ix = _storage(self.path).create_index(_schema())
            self._analyzer = self._ix.schema[self.FIELD].analyzer

    def analyze(self, text: str) -> list[str]:
        """The index terms for `text` (folded, CJK as bigrams, lowercased, stop words dropped, stemmed)."""
        return [t.text for t in self._analyzer(text)]

    def doc_count(self) -> int:
        with self._lock:
            return int(self.searcher().doc_count())

    @contextmanager
    def scoring(self) -> Iterator[KeywordView]:
        """BM25 over one generation of the index, held for the block (a commit meanwhile is not seen)."""
        from ragtui.stores.postings import Bm25Params, PostingCache

        with self._lock:
            if self._postings is None:
                self._postings = PostingCache(self.path, self.FIELD, LENGTH, self._bm25 or Bm25Params())
            searcher = self.searcher()
            yield KeywordView(searcher, self._postings.snapshot(searcher.reader()), self._chunks)

    def prepare(self) -> None:
        """Open the searcher and load the segments' arrays now, so the first query does not pay for them."""
        with self.scoring():
            pass

    def cached_segments(self) -> set[str]:
        """Ids of the segments whose posting arrays are cached (they follow the index's segments)."""
        with self._lock:
            return self._postings.segment_ids() if self._postings is not None else set()

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        """The chunks of these ids that the index holds, in the order asked."""
        with self.scoring() as view:
            return view.get(ids)

    def ids(self) -> set[str]:
        """Every chunk id, read from the id field's terms of live documents (no stored text loaded)."""
        with self._lock:
            reader = self.searcher().reader()
            return {t.decode("utf-8") if isinstance(t, bytes) else t
                    for t in reader.lexicon("chunk_id")
                    if any(True for _ in reader.postings("chunk_id", t).all_ids())}

    def sources(self) -> set[str]:
        with self._lock:
            return {f["source"] for f in self.searcher().all_stored_fields()}

    # --- writing ---------------------------------------------------------------

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        """One writer, committed as a new segment without merging (so a batch's cost does not grow with
        the index), or cancelled on an error; an index made before the length or chunk column gains it here."""
        writer = _reading_lengths_once(self._ix.writer(timeout=WRITE_LOCK_TIMEOUT))
        try:
            for name, field in ((LENGTH, _length_field), (CHUNK, _chunk_field)):
                if name not in writer.schema:
                    writer.add_field(name, field())
            yield writer
        except BaseException:
            try:
                writer.cancel()
            except OSError:        # a full disk fails the cancel's own segment close: the lock must go anyway
                if writer.writelock:
                    writer.writelock.release()
            raise
        writer.commit(merge=False)

    def _fields(self, chunk: Chunk, tokens: list[str] | None = None) -> dict[str, Any]:
        if tokens is None:
            tokens = self.analyze(chunk.text)
        return {"chunk_id": chunk.id, "source": chunk.meta.source, "text": tokens, "_stored_text": None,
                LENGTH: len(tokens), CHUNK: _encode(chunk)}

    def replace_sources(self, sources: Iterable[str], chunks: Iterable[Chunk],
                        tokens: Mapping[str, list[str]] | None = None) -> int:
        """Drop every chunk of `sources`, then add `chunks`, in one commit (readers see before or after).

        `tokens` may give chunks' terms as `analyze` makes them (by chunk id), analysed beforehand (in an
        extraction worker); a chunk without them is analysed here.

        Plain adds after the deletes are much faster than per-id updates. `sources`
        must name every source of `chunks` the index may already hold (ids derive
        from the source, so none survives); a source it cannot hold (new to the
        collection's records) may be left out, which saves its lookup.
        """
        n = 0
        with self._writing() as w:
            _delete_terms(w, "source", sources)
            for c in chunks:
                w.add_document(**self._fields(c, tokens.get(c.id) if tokens else None))
                n += 1
        return n

    def delete_sources(self, sources: Iterable[str]) -> int:
        with self._writing() as w:
            return _delete_terms(w, "source", sources)

    def delete_ids(self, ids: Iterable[str]) -> int:
        with self._writing() as w:
            return _delete_terms(w, "chunk_id", ids)

    def merge(self, parts: int = 1, build: BuildGroups | None = None, settled: int | None = None) -> int:
        """Fold the small segments together (`keyword_merge.merge_plan`) and save the postings file (postings
        and positions, `postings.PostingsFile`) of every segment without one; returns the segments left.
        Run at the end of an ingest.

        With `build`, a merge large enough is cut in up to `parts` groups: `build` gets each group's segment
        ids and a folder beside this one, and must leave there the group merged (`merge_into`, which it may
        run in processes of their own, all at once), while this writer holds the write lock; the groups'
        segments are then moved in, in one commit, as `adopt` moves a rebuilt index in. `settled`: the segment
        size a merge leaves alone (default `keyword_merge.SETTLED_DOCS`)."""
        from whoosh.writing import SegmentWriter

        from ragtui.stores.keyword_merge import commit_merged, merge_plan
        from ragtui.stores.postings import PostingsFile

        writer = _reading_lengths_once(self._ix.writer(timeout=WRITE_LOCK_TIMEOUT))
        assert isinstance(writer, SegmentWriter)
        for left in self.path.parent.glob(f"{self.path.name}.merge-*"):     # from a merge that was killed
            shutil.rmtree(left, ignore_errors=True)
        kept, groups = merge_plan(writer.segments, parts if build is not None else 1, settled)
        if not groups:
            writer.cancel()
        elif build is None or len(groups) == 1:
            commit_merged(writer, writer.storage, kept, groups[0])
        else:
            self._merge_apart(writer, kept, groups, build)
        with self._ix.reader() as reader:
            leaves = [leaf for leaf, _ in reader.leaf_readers() if leaf.segment() is not None]
            for leaf in leaves:
                if PostingsFile.open(self.path, leaf) is None:
                    PostingsFile.write(self.path, leaf, self.FIELD)
            return len(leaves)

    def _merge_apart(self, writer: Any, kept: list[Any], groups: list[list[Any]], build: BuildGroups) -> None:
        """`merge`'s groups built by `build` in folders beside this one, then committed in place of their
        segments by `writer` (which holds the write lock throughout); the folders are removed."""
        folders = [self.path.with_name(f"{self.path.name}.merge-{n}") for n in range(len(groups))]
        try:
            build([([seg.segment_id() for seg in group], folder)
                   for group, folder in zip(groups, folders, strict=True)])
            merged = []
            for folder in folders:
                built = _storage(folder).open_index()
                merged.extend(built._read_toc().segments)
                built.close()

            def take(w: Any, current: list[Any]) -> list[Any]:
                for folder in folders:
                    self._move_segment_files(folder)
                return kept + merged

            writer.commit(mergetype=take)
        except BaseException:
            if not writer.is_closed:
                writer.cancel()
            raise
        finally:
            for folder in folders:
                shutil.rmtree(folder, ignore_errors=True)

    def _move_segment_files(self, folder: Path) -> None:
        """Move the segment files (and their postings files) of the index built in `folder` in beside this one's
        (its table of contents stays behind), from inside a commit's merge function, under the write lock."""
        for name in sorted(os.listdir(folder)):
            if name.startswith(f"{self._ix.indexname}_") and not name.endswith("WRITELOCK"):
                os.replace(folder / name, self.path / name)

    def merge_into(self, segment_ids: Sequence[str], out: Path) -> None:
        """Merge these segments of this index into the one segment of a new index in `out`, with its postings
        file, for `merge` to move in. Takes no lock: the merge that asked holds this index's write lock."""
        from ragtui.stores.keyword_merge import commit_merged
        from ragtui.stores.postings import PostingsFile

        toc = self._ix._read_toc()
        wanted = set(segment_ids)
        take = [seg for seg in toc.segments if seg.segment_id() in wanted]
        if len(take) != len(wanted):
            raise RagtuiError(f"the keyword index in {self.path} no longer holds the segments to merge")
        out.mkdir(parents=True)
        built = _storage(out).create_index(toc.schema)
        commit_merged(_reading_lengths_once(built.writer()), self._ix.storage, [], take)
        with built.reader() as reader:
            for leaf, _ in reader.leaf_readers():
                PostingsFile.write(out, leaf, self.FIELD)
        built.close()

    def adopt(self, built: Path) -> int:
        """Take the index built in the folder `built` (beside this one, merged, no writer open) in place of
        every document here, in one commit that readers see whole; returns its documents.

        Whoosh's own commit does it, with a merge function that moves the built segments' files (and their
        postings files) in beside the current ones and returns those segments as the index's: the new table
        of contents lists only them, under the built index's schema (its analyzer the current one), and
        Whoosh's clean-up deletes the old segments' files, as after any merge. A reader of the old
        generation keeps what it holds open and sees the new one at its next refresh. `built` is removed.
        """
        source = _storage(built).open_index()
        segments = list(source._read_toc().segments)
        schema = source.schema
        count = sum(seg.doc_count() for seg in segments)
        source.close()

        def take(writer: Any, current: list[Any]) -> list[Any]:
            self._move_segment_files(built)
            return segments

        with self._lock:
            writer = self._ix.writer(timeout=WRITE_LOCK_TIMEOUT)
            writer.schema = schema
            writer.commit(mergetype=take)
            self._ix = _storage(self.path).open_index()
            self._analyzer = self._ix.schema[self.FIELD].analyzer
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None
            self._postings = None
            self._chunks.clear()
        shutil.rmtree(built, ignore_errors=True)
        return count

    def close(self) -> None:
        """Close the searcher and drop the cached arrays, descriptors and chunks (a later read reopens)."""
        with self._lock:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None
            self._postings = None
            self._chunks.clear()


class KeywordView:
    """One generation of the index, for the duration of `KeywordIndex.scoring()`: BM25 scores and chunks."""

    def __init__(self, searcher: Any, snapshot: Bm25Snapshot, chunks: OrderedDict[tuple[str, int], Chunk]) -> None:
        self._searcher = searcher     # the snapshot's generation: its document numbers are the snapshot's
        self.bm25 = snapshot
        self._chunks = chunks     # the index's LRU of decoded hits, used under the index's lock

    def frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(N, {term: df}): N live chunks, df the chunks holding the (analysed) term, deleted ones included, as
        Whoosh counts it (for the keyword leg's smoothed IDF and its gate), read from the segments' cached
        postings that scoring then uses (a term's IDF is cached for as long as its segments are)."""
        return self.bm25.n_docs, {t: self.bm25.postings_count((t,)) for t in terms}

    def search(self, clauses: Sequence[Clause], top_k: int, *, require_all: bool,
               allowed: Sequence[Any] | None = None) -> list[tuple[Chunk, float]]:
        """The best chunks, with their BM25 scores; only these few chunks are read. `allowed` (from `within`)
        keeps the search to part of the index."""
        found = self.bm25.search(clauses, top_k, require_all=require_all, allowed=allowed)
        return list(zip(self.chunks([doc for doc, _ in found]), [score for _, score in found], strict=True))

    def within(self, *, sources: Iterable[str] = (), ids: Iterable[str] | None = None) -> list[Any]:
        """The `allowed` mask of a filtered search: these chunk ids when given, else every chunk of these files."""
        return self.bm25.holding("chunk_id", ids) if ids is not None else self.bm25.holding("source", sources)

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        """The chunks of these ids in this generation, in the order asked (ids it does not hold left out)."""
        docs = (self._searcher.document_number(chunk_id=cid) for cid in ids)
        return self.chunks([doc for doc in docs if doc is not None])

    def chunks(self, docs: Sequence[int]) -> list[Chunk]:
        """The chunks of (live) document numbers of this generation, in order; those not cached are read
        together (`stored.RawColumn.values`)."""
        keys = [self.bm25.locate(doc) for doc in docs]
        missing = list({key: doc for doc, key in zip(docs, keys, strict=True) if key not in self._chunks}.values())
        if missing:
            raws = self.bm25.column_values(missing, CHUNK, _chunk_column())
            older = [doc for doc, raw in zip(missing, raws, strict=True) if not raw]   # written before the column
            stored = dict(zip(older, self.bm25.stored_fields(older), strict=True))
            for doc, raw in zip(missing, raws, strict=True):
                self._chunks[self.bm25.locate(doc)] = _decode(raw) if raw else _from_stored(stored[doc])
        out = []
        for key in keys:
            out.append(self._chunks[key])
            self._chunks.move_to_end(key)
        while len(self._chunks) > CHUNKS_CACHED:
            self._chunks.popitem(last=False)
        return out


def _encode(chunk: Chunk) -> bytes:
    """The chunk column's value: a pickle of (id, text, metadata dict), as Whoosh stores fields, uncompressed
    (decoding it is ~1.4 us a hit; the same as JSON ~4 us)."""
    return pickle.dumps((chunk.id, chunk.text, chunk.meta.to_dict()), protocol=5)


def _decode(raw: bytes) -> Chunk:
    cid, text, meta = pickle.loads(raw)
    return Chunk(id=cid, text=text, meta=ChunkMeta.from_dict(meta))


def _from_stored(fields: dict[str, Any]) -> Chunk:
    """A chunk written before the chunk column, from its stored fields."""
    meta = json.loads(fields["meta"])
    return Chunk(id=fields["chunk_id"], text=fields["text"], meta=ChunkMeta.from_dict(meta))
