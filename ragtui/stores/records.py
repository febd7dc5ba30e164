"""The ingest records of a collection: one SQLite file (WAL) that is also the ingest's journal.

    files   one row per file or zip member: hash, size, format, status, reason, chunk count, and the
            chunks the filters dropped per reason (for the collection-quality report)
    chunks  the chunks of indexed files (text, zlib-compressed, and flat metadata), so an interrupted or
            embedding-less ingest can be completed without re-extracting anything; and each
            chunk's `Chunk.vector_key`, so a chunk of the same heading and text elsewhere in the
            collection takes its vector instead of being embedded again (NULL for chunks recorded
            before the key was). A text recorded before the compression is a plain string and is
            read as it is (`_text`)
    embeds  one row per (chunk, model) whose vector is in Chroma: the per-model embed status
    texts   the extracted text of each indexed file (zlib) and its page starts, so the source
            viewer can show a chunk in its document, at its offsets, even if the file moved

A file is "indexing" from the moment its chunks are recorded until both its keyword
entries are committed; it becomes "done" only after that. Reconciliation trusts
these rows: the keyword index must hold exactly the chunks of "done" files, and
each vector index exactly the chunks with an embeds row for its model.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ragtui.model.chunks import Chunk, ChunkMeta
from ragtui.timestamps import now as _now

RECORDS_FILE = "records.sqlite3"

INDEXING, DONE, SKIPPED, DUPLICATE = "indexing", "done", "skipped", "duplicate"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    source    TEXT PRIMARY KEY,
    root      TEXT NOT NULL DEFAULT '',
    container TEXT NOT NULL DEFAULT '',
    hash      TEXT NOT NULL DEFAULT '',
    size      INTEGER NOT NULL DEFAULT 0,
    format    TEXT NOT NULL DEFAULT '',
    signature TEXT NOT NULL DEFAULT '',
    status    TEXT NOT NULL,
    reason    TEXT NOT NULL DEFAULT '',
    chunks    INTEGER NOT NULL DEFAULT 0,
    updated   TEXT NOT NULL,
    filtered  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS files_hash ON files(hash);
CREATE INDEX IF NOT EXISTS files_container ON files(container);
CREATE TABLE IF NOT EXISTS chunks (
    id      TEXT PRIMARY KEY,
    source  TEXT NOT NULL,
    text    TEXT NOT NULL,
    meta    TEXT NOT NULL,
    entropy REAL NOT NULL,
    words   INTEGER NOT NULL,
    key     BLOB
);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source);
CREATE TABLE IF NOT EXISTS texts (
    source TEXT PRIMARY KEY,
    text   BLOB NOT NULL,
    pages  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS embeds (
    chunk_id TEXT NOT NULL,
    model    TEXT NOT NULL,
    PRIMARY KEY (chunk_id, model)
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class FileRecord:
    source: str
    root: str = ""
    container: str = ""
    hash: str = ""
    size: int = 0
    format: str = ""
    signature: str = ""
    status: str = INDEXING
    reason: str = ""
    chunks: int = 0
    filtered: str = ""        # JSON {reason: chunks dropped by the filters}; "" when none were





class IngestRecords:
    """Thread-safe access to one collection's records (one connection, one lock)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / RECORDS_FILE
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._lock = threading.RLock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            columns = {r[1] for r in self._db.execute("PRAGMA table_info(files)")}
            if "filtered" not in columns:           # records written before the filter counts were kept
                self._db.execute("ALTER TABLE files ADD COLUMN filtered TEXT NOT NULL DEFAULT ''")
            if "key" not in {r[1] for r in self._db.execute("PRAGMA table_info(chunks)")}:
                self._db.execute("ALTER TABLE chunks ADD COLUMN key BLOB")     # records written before the key
            self._db.execute("CREATE INDEX IF NOT EXISTS chunks_key ON chunks(key)")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _rows(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _rows_in(self, sql: str, values: Iterable[object], *before: object) -> list[tuple]:
        """`sql` with its "{marks}" bound to `values` (after the `before` arguments), 500 at a time: SQLite's
        default limit on bound parameters is 999."""
        wanted = list(dict.fromkeys(values))
        out: list[tuple] = []
        for start in range(0, len(wanted), 500):
            part = wanted[start:start + 500]
            out.extend(self._rows(sql.format(marks=",".join("?" * len(part))), (*before, *part)))
        return out

    # --- files -----------------------------------------------------------------------

    def file(self, source: str) -> FileRecord | None:
        rows = self._rows(f"SELECT {_FILE_COLS} FROM files WHERE source = ?", (source,))
        return FileRecord(*rows[0]) if rows else None

    def files(self, status: str | None = None) -> list[FileRecord]:
        if status is None:
            return [FileRecord(*r) for r in self._rows(f"SELECT {_FILE_COLS} FROM files ORDER BY source")]
        return [FileRecord(*r) for r in self._rows(f"SELECT {_FILE_COLS} FROM files WHERE status = ? "
                                                   "ORDER BY source", (status,))]

    def top_sources(self, roots: Iterable[str]) -> set[str]:
        """Top-level sources (not zip members) that came from any of these roots."""
        out: set[str] = set()
        for root in roots:
            out.update(r[0] for r in self._rows("SELECT source FROM files WHERE root = ? AND container = ''",
                                                (root,)))
        return out

    def indexed_source_with_hash(self, file_hash: str, other_than: str) -> str | None:
        """An indexed file with these exact bytes, for content dedupe."""
        rows = self._rows("SELECT source FROM files WHERE hash = ? AND status = ? AND source != ? "
                          "ORDER BY source LIMIT 1", (file_hash, DONE, other_than))
        return rows[0][0] if rows else None

    def recorded(self, sources: Iterable[str]) -> list[str]:
        """The sources that have a row (any status), in the order given: the only ones a store can hold
        (files leave the records before the stores; an interrupted run is reconciled first)."""
        sources = list(sources)
        found = {r[0] for r in self._rows_in("SELECT source FROM files WHERE source IN ({marks})", sources)}
        return [s for s in sources if s in found]

    def members(self, container: str) -> list[str]:
        return [r[0] for r in self._rows("SELECT source FROM files WHERE container = ?", (container,))]

    def members_in(self, container: str, status: str) -> list[FileRecord]:
        return [FileRecord(*r) for r in self._rows(f"SELECT {_FILE_COLS} FROM files WHERE container = ? AND "
                                                   "status = ? ORDER BY source", (container, status))]

    def put_file(self, rec: FileRecord) -> None:
        """Record a file without chunks (skipped, duplicate, a zip container)."""
        with self._tx() as db:
            self._drop_chunks(db, [rec.source])
            self._upsert_file(db, rec)

    def begin(self, batch: Sequence[tuple[FileRecord, Sequence[Chunk]]],
              texts: Mapping[str, tuple[str, list[tuple[int, str, int]]]] | None = None) -> None:
        """Journal the new chunks of these files (status "indexing"), replacing any older ones, in one commit.

        `texts` maps a source to its extracted text and (start, label, index) pages.
        """
        texts = texts or {}
        with self._tx() as db:
            for rec, chunks in batch:
                self._drop_chunks(db, [rec.source])
                self._upsert_file(db, rec)
                if rec.source in texts:
                    text, pages = texts[rec.source]
                    db.execute("INSERT OR REPLACE INTO texts (source, text, pages) VALUES (?, ?, ?)",
                               (rec.source, zlib.compress(text.encode("utf-8"), 3), json.dumps(pages)))
                db.executemany("INSERT OR REPLACE INTO chunks (id, source, text, meta, entropy, words, key) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?)",
                               [(c.id, c.meta.source, _packed(c.text), _meta_json(c.meta), c.meta.text_entropy,
                                 c.meta.word_count, c.vector_key) for c in chunks])

    def move_root(self, source: str, root: str) -> None:
        """The file (and its members, for an archive) now comes from `root`: its folder was renamed or moved."""
        with self._tx() as db:
            db.execute("UPDATE files SET root = ? WHERE source = ? OR container = ?", (root, source, source))

    def mark_done(self, sources: Iterable[str]) -> None:
        with self._tx() as db:
            db.executemany("UPDATE files SET status = ?, updated = ? WHERE source = ?",
                           [(DONE, _now(), s) for s in sources])

    def remove(self, sources: Iterable[str]) -> None:
        with self._tx() as db:
            sources = list(sources)
            self._drop_chunks(db, sources)
            db.executemany("DELETE FROM files WHERE source = ?", [(s,) for s in sources])

    def _upsert_file(self, db: sqlite3.Connection, rec: FileRecord) -> None:
        db.execute(f"INSERT OR REPLACE INTO files ({_FILE_COLS}, updated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                   (rec.source, rec.root, rec.container, rec.hash, rec.size, rec.format, rec.signature,
                    rec.status, rec.reason, rec.chunks, rec.filtered, _now()))

    @staticmethod
    def _drop_chunks(db: sqlite3.Connection, sources: Sequence[str]) -> None:
        for s in sources:
            db.execute("DELETE FROM embeds WHERE chunk_id IN (SELECT id FROM chunks WHERE source = ?)", (s,))
            db.execute("DELETE FROM chunks WHERE source = ?", (s,))
            db.execute("DELETE FROM texts WHERE source = ?", (s,))

    def document(self, source: str) -> tuple[str, list[tuple[int, str, int]]] | None:
        """The extracted text of an indexed file and its (start, label, index) pages; chunk offsets point into it."""
        rows = self._rows("SELECT text, pages FROM texts WHERE source = ?", (source,))
        if not rows:
            return None
        return zlib.decompress(rows[0][0]).decode("utf-8"), [tuple(p) for p in json.loads(rows[0][1])]

    # --- chunks and embed status --------------------------------------------------------

    def chunk_ids(self, status: str = DONE) -> set[str]:
        """Ids of the chunks of files in `status`."""
        return {r[0] for r in self._rows("SELECT c.id FROM chunks c JOIN files f ON f.source = c.source "
                                         "WHERE f.status = ?", (status,))}

    def chunks_of(self, sources: Iterable[str]) -> list[Chunk]:
        out: list[Chunk] = []
        for s in sources:
            out.extend(_chunk(r) for r in self._rows("SELECT id, text, meta FROM chunks WHERE source = ? "
                                                     "ORDER BY id", (s,)))
        return out

    def chunks_by_id(self, ids: Iterable[str]) -> list[Chunk]:
        out: list[Chunk] = []
        for i in ids:
            out.extend(_chunk(r) for r in self._rows("SELECT id, text, meta FROM chunks WHERE id = ?", (i,)))
        return out

    def headings(self, sources: Iterable[str]) -> list[tuple[str, str]]:
        """(chunk id, heading path) of every chunk of these files."""
        return [(cid, heading or "") for cid, heading in self._rows_in(
            "SELECT id, json_extract(meta, '$.heading') FROM chunks WHERE source IN ({marks})", sources)]

    def done_texts(self, ids: Sequence[str]) -> dict[str, str]:
        """{id: text} of those chunks that belong to a "done" file now (a vector is only stored for these)."""
        return {cid: _text(text) for cid, text in self._rows_in(
            "SELECT c.id, c.text FROM chunks c JOIN files f ON f.source = c.source "
            "WHERE f.status = ? AND c.id IN ({marks})", ids, DONE)}

    def embedded_ids(self, model: str) -> set[str]:
        return {r[0] for r in self._rows("SELECT chunk_id FROM embeds WHERE model = ?", (model,))}

    def embedded_with_keys(self, model: str, keys: Iterable[bytes]) -> dict[bytes, str]:
        """{key: the id of one chunk with that `Chunk.vector_key` whose `model` vector is stored}, for those keys
        that have one."""
        return {key: cid for key, cid in self._rows_in(
            "SELECT c.key, c.id FROM chunks c JOIN embeds e ON e.chunk_id = c.id AND e.model = ? "
            "WHERE c.key IN ({marks})", keys, model)}

    def embedded_count(self, model: str) -> int:
        """How many chunks the records say `model`'s vector store holds."""
        return int(self._rows("SELECT count(*) FROM embeds WHERE model = ?", (model,))[0][0])

    def pending(self, model: str, limit: int, after: Chunk | None = None) -> list[Chunk]:
        """Chunks of indexed files still without a vector from `model` (embedding resumes where it stopped), in
        the order of their files and ids; only those after chunk `after` in that order when given (the next
        page while the pages before it are still being stored)."""
        past = "AND (c.source, c.id) > (?, ?) " if after is not None else ""
        rows = self._rows("SELECT c.id, c.text, c.meta FROM chunks c JOIN files f ON f.source = c.source "
                          "WHERE f.status = ? AND NOT EXISTS (SELECT 1 FROM embeds e WHERE e.chunk_id = c.id "
                          f"AND e.model = ?) {past}ORDER BY c.source, c.id LIMIT ?",
                          (DONE, model, *((after.meta.source, after.id) if after is not None else ()), limit))
        return [_chunk(r) for r in rows]

    def pending_count(self, model: str) -> int:
        return int(self._rows("SELECT count(*) FROM chunks c JOIN files f ON f.source = c.source "
                              "WHERE f.status = ? AND NOT EXISTS (SELECT 1 FROM embeds e WHERE e.chunk_id = c.id "
                              "AND e.model = ?)", (DONE, model))[0][0])

    def mark_embedded(self, ids: Iterable[str], model: str) -> None:
        with self._tx() as db:
            db.executemany("INSERT OR IGNORE INTO embeds (chunk_id, model) VALUES (?, ?)",
                           [(i, model) for i in ids])

    def unmark_embedded(self, ids: Iterable[str], model: str) -> None:
        with self._tx() as db:
            db.executemany("DELETE FROM embeds WHERE chunk_id = ? AND model = ?", [(i, model) for i in ids])

    # --- statistics (collections info) -----------------------------------------------------

    def chunk_counts(self, sources: Iterable[str]) -> dict[str, int]:
        """Indexed chunks per file, for these files (the per-file cap grows with a file's length)."""
        return dict(self._rows_in("SELECT source, chunks FROM files WHERE source IN ({marks})", sources))

    def status_counts(self) -> dict[str, int]:
        """Files per status, zip containers left out."""
        return dict(self._rows("SELECT status, count(*) FROM files WHERE format != 'zip' GROUP BY status"))

    def format_counts(self) -> dict[str, int]:
        return dict(self._rows("SELECT format, count(*) FROM files WHERE status = ? AND format != 'zip' "
                               "GROUP BY format ORDER BY format", (DONE,)))

    def filter_counts(self) -> list[tuple[str, int, dict[str, int]]]:
        """(source, chunks kept, chunks dropped per reason) of each indexed file the filters took chunks from."""
        return [(s, int(n), json.loads(f)) for s, n, f in self._rows(
            "SELECT source, chunks, filtered FROM files WHERE status = ? AND filtered != '' ORDER BY source",
            (DONE,))]

    def chunk_edges(self) -> Iterator[tuple[str, str, str, int, int]]:
        """(format, heading path, the file's extracted text, char_start, lead) of every indexed chunk, read
        file by file (one text per file, shared by its chunks)."""
        for (source,) in self._rows("SELECT source FROM files WHERE status = ? ORDER BY source", (DONE,)):
            doc = self.document(source)
            text = doc[0] if doc else ""
            for (meta,) in self._rows("SELECT meta FROM chunks WHERE source = ?", (source,)):
                m = json.loads(meta)
                yield (str(m.get("format", "")), str(m.get("heading", "")), text, int(m.get("char_start", 0)),
                       int(m.get("lead", 0)))

    def chunk_stats(self) -> list[tuple[float, int]]:
        """(text_entropy, word_count) of every indexed chunk."""
        return [(float(e), int(w)) for e, w in self._rows(
            "SELECT c.entropy, c.words FROM chunks c JOIN files f ON f.source = c.source WHERE f.status = ?",
            (DONE,))]


_FILE_COLS = "source, root, container, hash, size, format, signature, status, reason, chunks, filtered"


def _meta_json(meta: ChunkMeta) -> str:
    return json.dumps(meta.to_dict(), separators=(",", ":"))


def _packed(text: str) -> bytes:
    """A chunk's text as the records hold it: zlib at level 1. The records are read back only to embed or
    re-index (queries read the keyword index), and at 1M chunks of English prose this made the texts 0.56x
    their size for ~50 CPU-s over the build (docs/benchmarks.md)."""
    return zlib.compress(text.encode("utf-8"), 1)


def _text(value: bytes | str) -> str:
    """A recorded chunk text: compressed (`_packed`), or a plain string recorded before the compression."""
    return zlib.decompress(value).decode("utf-8") if isinstance(value, bytes) else value


def _chunk(row: tuple) -> Chunk:
    cid, text, meta = row
    return Chunk(cid, _text(text), ChunkMeta.from_dict(json.loads(meta)))
