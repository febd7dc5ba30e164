"""Named collections: one folder each under the data dir, holding its manifest and its indexes.

    <data_dir>/collections/<name>/
        collection.json   manifest: topic, created, embedding models, ingest state
        whoosh/           keyword index (stores.keyword)
        sentences/        sentence-level keyword index, when built (strategies.sentence_window)
        chroma/           embedded Chroma (absent when [chroma] host points at a server)
        records.sqlite3   ingest records and journal (stores.records)
        ingest.lock       held (flock) by the ingest writing into the collection (Collection.ingest_lock)
        chroma.lock       the vector stores' reader/writer lock (Collection.vector_access)
        chroma.generation how many vector writes were committed; readers reload Chroma when it moves on

The multi-process rule: any number of processes may read a collection while one
ingest writes into it. Chroma's embedded store is not safe to read while another
process writes it (a reader loading the HNSW files mid-write crashed in native
code) and never sees another process's writes (it loads an index once), so every
vector access takes `chroma.lock`, shared to read and exclusive to write; a writer
holds it for one store call at a time and then bumps the generation, and a reader
that finds a newer generation than its process loaded restarts its Chroma system.
A large ingest's vectors are written by a process of its own (`Collection.serve_apart`,
stores/vector_process.py); the ingesting process takes the lock and bumps the
generation around each of its calls, as for its own writes.

Stores open lazily, so listing collections never imports chromadb.

Damage stays in the collection it hit: `Collection.damage()` is the one answer to
"is this collection damaged, and why" (an unreadable manifest, records, keyword
index or vector store; `CollectionRegistry.path` refuses a link in a
collection's place the same way), and `Collection.unreadable(exc)` says what an
error met while reading one means (it was deleted meanwhile, or its files are
damaged). The listing, the retriever and the TUI use both; a damaged collection
can always be deleted.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragtui import timestamps
from ragtui.config import Settings
from ragtui.errors import RagtuiError
from ragtui.model.collection import CollectionInfo, CollectionState
from ragtui.stores.keyword import KeywordIndex
from ragtui.stores.records import RECORDS_FILE, IngestRecords
from ragtui.stores.vector import (
    VectorIndex,
    VectorServerDown,
    VectorStore,
    chroma_client,
    chroma_name,
    copy_root,
    embedded_epoch,
    note_written,
    release_embedded,
    server_address,
    server_down,
)
from ragtui.stores.vector_process import VectorProcess

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")
NAME_RULE = "1-63 letters, digits, '-' or '_', starting with a letter or digit"
MANIFEST = "collection.json"
KEYWORD = "whoosh"
SENTENCES = "sentences"
LOCK_FILE = "ingest.lock"
WATCH_LOCK = "watch.lock"
VECTOR_LOCK = "chroma.lock"
GENERATION = "chroma.generation"


class CollectionError(RagtuiError):
    """A collection that cannot be created, found or removed; the message says what to do."""


class IngestBusy(CollectionError):
    """Another ingest holds the collection's lock."""


@dataclass(frozen=True)
class Damage:
    """Why a collection cannot be used as it is: the file (or folder) that could not be read and the error.
    Damaged vectors alone (`vectors_only`) still leave the keyword index to search."""

    file: Path
    reason: str
    vectors_only: bool = False

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}"


class CollectionDamaged(CollectionError):
    """A collection whose files cannot be read; the message names the file, the error and the way out."""

    def __init__(self, name: str, damage: Damage) -> None:
        self.name = name
        self.damage = damage
        super().__init__(f"collection {name} is damaged ({damage})",
                         hint=f"delete it with `ragtui collections delete {name} --yes`, then ingest again")


class CollectionGone(CollectionError):
    """The collection was deleted (by another process) while it was being read."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"collection {name} was deleted while this query ran")


def reembed_command(name: str, model: str) -> str:
    """The command that embeds a collection's chunks again with one model, from its records (what a vector index
    of the wrong dimension, or with vectors that can never be right, needs)."""
    return f"`ragtui collections reembed {name} --model {model}`"


def _reason(exc: BaseException) -> str:
    """The first line of an error, with its type when the message alone would not say what it is."""
    lines = str(exc).strip().splitlines()
    text = lines[0][:300] if lines else ""
    if isinstance(exc, (OSError, ValueError, sqlite3.Error)) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def validate_collection_name(name: str) -> str:
    """The name, when it is one a collection may have (it is also a folder name); CollectionError if not."""
    if not NAME_RE.fullmatch(name):
        raise CollectionError(f"invalid collection name {name!r}: use {NAME_RULE}", exit_code=2)
    return name


class Collection:
    def __init__(self, settings: Settings, path: Path) -> None:
        self.settings = settings
        self.path = path
        self.name = path.name
        self._keyword: KeywordIndex | None = None
        self._sentences: KeywordIndex | None = None
        self._open_lock = threading.Lock()   # retrieval legs and ingest steps run in threads and open stores lazily
        self._vectors: dict[str, VectorStore] = {}
        self._apart: VectorProcess | None = None     # the process serving the vectors meanwhile (serve_apart)
        self._client: Any = None
        self._client_epoch = 0
        self._vectors_generation = -1    # the generation the vector indexes' cached counts belong to
        self._preparing = threading.Lock()   # one prepare() at a time; close() waits for it
        self._records: IngestRecords | None = None

    # --- manifest ----------------------------------------------------------------

    @property
    def manifest(self) -> dict[str, Any]:
        """The manifest's fields; CollectionGone when it is gone (the collection deleted by another process)."""
        try:
            text = (self.path / MANIFEST).read_text(encoding="utf-8")
        except FileNotFoundError:
            self._still_here()
            raise
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"{MANIFEST} holds JSON that is not an object")
        return data

    def update_manifest(self, **fields: Any) -> dict[str, Any]:
        """Merge fields into the manifest; written atomically so a kill never leaves half a file."""
        data = {**self.manifest, **fields}
        _replace_file(self.path / MANIFEST, json.dumps(data, indent=2))
        return data

    @property
    def topic(self) -> str:
        return str(self.manifest.get("topic", ""))

    @property
    def models(self) -> list[str]:
        """Embedding models this collection has vectors for (set by ingest)."""
        return list(self.manifest.get("models", []))

    # --- stores --------------------------------------------------------------------

    @property
    def keyword(self) -> KeywordIndex:
        with self._open_lock:
            if self._keyword is None:
                self._keyword = self._keyword_index(KEYWORD)
            return self._keyword

    @property
    def has_sentences(self) -> bool:
        """The collection has a sentence index (built by an ingest with strategies.sentence_window on)."""
        return (self.path / SENTENCES).exists()

    @property
    def sentences(self) -> KeywordIndex:
        """The sentence-level keyword index of sentence-window retrieval (ingest/sentences.py); opening it
        creates it."""
        with self._open_lock:
            if self._sentences is None:
                self._sentences = self._keyword_index(SENTENCES)
            return self._sentences

    def _keyword_index(self, folder: str) -> KeywordIndex:
        """A keyword index in `folder` of the collection, with the settings' BM25 parameters (under _open_lock)."""
        self._still_here()
        from ragtui.stores.postings import Bm25Params  # numpy: not before the TUI's first frame

        keyword = self.settings.keyword
        return KeywordIndex(self.path / folder, Bm25Params(keyword.bm25_k1, keyword.bm25_b))

    def vectors(self, model: str) -> VectorStore:
        """The model's vector index; use it only inside `vector_access()` (see the module docstring)."""
        with self._open_lock:
            if model not in self._vectors:
                chroma = self.settings.chroma
                if self._apart is not None:
                    self._vectors[model] = self._apart.index(self.chroma_name(model), model,
                                                             hnsw_ef=chroma.hnsw_ef, hnsw_m=chroma.hnsw_m)
                    return self._vectors[model]
                if self._client is None:
                    self._still_here()
                    # the epoch first: catching up may stop this process's system, which a client made before
                    # would then be left holding
                    self._client_epoch = self._epoch(self.generation())
                    self._client = chroma_client(chroma, self.path / "chroma")
                self._vectors[model] = VectorIndex(
                    self._client, self.chroma_name(model), model, hnsw_ef=chroma.hnsw_ef, hnsw_m=chroma.hnsw_m,
                    copies=None if chroma.host else copy_root(self.path / "chroma"))
            return self._vectors[model]

    def serve_apart(self) -> None:
        """From now on (until `end_apart`), this process's uses of the embedded vector indexes are answered by a
        process of their own (stores/vector_process.py: a Chroma write there stops nothing here). Starts it on
        the calling thread, which must outlive its use (the process dies with the thread that started it, on
        Linux). Nothing changes on a Chroma server, or when it serves already."""
        if self.settings.chroma.host or self._apart is not None:
            return
        self._still_here()
        process = VectorProcess(self.settings.chroma, self.path / "chroma")
        with self._open_lock:
            self._apart = process
            self._vectors.clear()

    def end_apart(self) -> None:
        """Stop the process `serve_apart` started (waiting for the call it is answering); back to this
        process's own client, which reloads what that process wrote before its next read."""
        with self._open_lock:
            process, self._apart = self._apart, None
            if process is not None:
                self._vectors.clear()
        if process is not None:
            process.close()

    def drop_vectors(self, model: str) -> None:
        """Delete every vector of `model` (its whole Chroma collection, dimension and all); inside
        `vector_access(write=True)`. The caller un-marks them in the records."""
        index = self.vectors(model)
        with self._open_lock:
            self._vectors.pop(model, None)
        index.drop()

    def prepare(self, models: Sequence[str], *, keyword: bool = True) -> None:
        """Open what a query reads, each store in its own thread so their cold loads overlap: the keyword
        index's searcher and segment arrays, and each model's vector index (Chroma loads a collection's HNSW
        index on its first use: ~0.5 CPU-s at 110k vectors). Already open: nothing to do."""
        with self._open_lock:
            jobs: list[Callable[[], object]] = [functools.partial(self._load_vectors, m)
                                                for m in models if m not in self._vectors]
            cold_keyword = self._keyword is None or not self._keyword.cached_segments()
        if keyword and cold_keyword and (self.path / KEYWORD).exists():
            jobs.append(lambda: self.keyword.prepare())
        # Another thread's prepare under way (a one-shot command's, started beside its imports) is not waited
        # for: each leg waits only for the store it reads, and a vector leg reads the index's copy while Chroma
        # loads (stores/vector.py), so a first query is not held for the whole load.
        if not jobs or not self._preparing.acquire(blocking=False):
            return
        try:
            if len(jobs) == 1:
                jobs[0]()
            else:
                with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
                    for future in [pool.submit(job) for job in jobs]:
                        future.result()
        finally:
            self._preparing.release()

    def _load_vectors(self, model: str) -> None:
        with self.vector_access():
            self.vectors(model).count()

    def chroma_name(self, model: str) -> str:
        """The Chroma collection of this model's vectors: prefixed by the collection's name on a shared
        server; in the collection's own embedded Chroma the model alone tells them apart."""
        return chroma_name(f"ragtui-{self.name}" if self.settings.chroma.host else "chunks", model)

    def generation(self) -> int:
        """How many vector writes were committed to this collection (0 before the first)."""
        try:
            return int((self.path / GENERATION).read_text(encoding="ascii"))
        except (OSError, ValueError):
            return 0

    @contextmanager
    def vector_access(self, *, write: bool = False) -> Iterator[None]:
        """Around every use of `vectors()`: shared to read, exclusive to write, from any process.

        A reader first makes sure its process's Chroma system holds the latest committed
        generation (reloading it when another process wrote since); a writer bumps the
        generation when its block ends. Never nested: flock locks of two descriptors
        conflict even inside one process. On a Chroma server that does not answer, the
        block ends with VectorServerDown (nothing written, the generation unchanged).
        """
        with open(self.path / VECTOR_LOCK, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
            try:
                self._follow(self.generation())
                try:
                    yield
                except Exception as exc:
                    if (self.settings.chroma.host and not isinstance(exc, VectorServerDown)
                            and (reason := server_down(exc)) is not None):
                        raise VectorServerDown(self.settings.chroma, reason) from exc
                    raise
                if write:
                    self._bump()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _follow(self, generation: int) -> None:
        """Catch up with `generation`: drop this collection's client when its process's embedded Chroma
        system had to be reloaded, and the vector indexes' cached counts when anyone wrote since."""
        epoch = self._epoch(generation)
        with self._open_lock:
            if self._client is not None and self._client_epoch != epoch:
                self._client = None      # its system is already stopped; vectors() makes a new client
                self._vectors.clear()
            if self._vectors_generation != generation:
                for index in self._vectors.values():
                    index.forget()
                self._vectors_generation = generation

    def _epoch(self, generation: int) -> int:
        """The epoch of this process's embedded Chroma system once it holds `generation` (0 on a server)."""
        return 0 if self.settings.chroma.host else embedded_epoch(self.path / "chroma", generation)

    def _bump(self) -> None:
        generation = self.generation() + 1
        _replace_file(self.path / GENERATION, str(generation))
        if not self.settings.chroma.host and self._apart is None:   # written by this process's own system
            note_written(self.path / "chroma", generation)

    @property
    def records(self) -> IngestRecords:
        with self._open_lock:
            if self._records is None:
                self._still_here()
                self._records = IngestRecords(self.path)
            return self._records

    def document(self, source: str) -> tuple[str, list[tuple[int, str, int]]] | None:
        """The extracted text of an indexed file, with its (start, label, index) pages, for the source viewer.

        A chunk's char_start/char_end point into this text; None when the file is not indexed.
        """
        if not (self.path / RECORDS_FILE).exists():
            return None
        return self.records.document(source)

    def original(self, source: str) -> Path | None:
        """Where the indexed file `source` was ingested from, when that file is still there; None for a member of
        an archive, a file gone from disk, or a damaged records file."""
        try:
            record = self.records.file(source)
        except Exception:  # a damaged records file: no path
            return None
        if record is None or not record.root or record.container:
            return None
        root = Path(record.root)
        path = root / source if root.is_dir() else root
        return path if path.is_file() else None

    @contextmanager
    def ingest_lock(self) -> Iterator[None]:
        """Held for a whole ingest: a second one into this collection, from any process, gets IngestBusy."""
        with _flocked(self.path / LOCK_FILE, f"another ingest is writing into collection {self.name!r}"):
            yield

    def ingest_running(self) -> bool:
        """Whether some process holds the ingest lock of this collection right now."""
        return held(self.path / LOCK_FILE)

    @contextmanager
    def watch_lock(self) -> Iterator[None]:
        """Held while `ingest --watch` keeps this collection in step with a folder: a second watch gets
        IngestBusy, and `watched` (the collections pane's mark) is true for every process meanwhile."""
        with _flocked(self.path / WATCH_LOCK, f"another `ingest --watch` is keeping collection {self.name!r} in "
                                              "step with its folder"):
            yield

    @property
    def watched(self) -> bool:
        """Whether some process is watching a folder for this collection right now (`watch_lock`)."""
        return held(self.path / WATCH_LOCK)

    @property
    def state(self) -> CollectionState:
        """The manifest's state, except that an ingest nobody runs any more reads as "interrupted"."""
        state: CollectionState = self.manifest.get("state") or "empty"
        if state == "ingesting" and not self.ingest_running():
            return "interrupted"
        return state

    def info(self) -> CollectionInfo:
        """The collection's summary; a damaged collection gives state "damaged" (naming the file and the error,
        `damage()`) instead of failing, so one broken collection never hides the others. Damaged vectors alone
        leave the rest of the summary to read."""
        damage = self.damage()
        if damage is None or damage.vectors_only:
            try:
                info = self._info()
            except Exception as exc:  # damaged since damage() looked, or deleted: unreadable() tells which
                damage = _damage_or_gone(self.unreadable(exc))
            else:
                return info if damage is None else replace(info, state="damaged", damaged=str(damage))
        return CollectionInfo(self.name, "", "", (), 0, "damaged", damaged=str(damage))

    def _info(self) -> CollectionInfo:
        manifest = self.manifest
        chunks = self.keyword.doc_count() if (self.path / KEYWORD).exists() else 0
        files = skipped = 0
        if (self.path / RECORDS_FILE).exists():
            counts = self.records.status_counts()
            files, skipped = counts.get("done", 0), counts.get("skipped", 0)
        return CollectionInfo(self.name, str(manifest.get("topic", "")), str(manifest.get("created", "")),
                              tuple(manifest.get("models", [])), chunks, self.state, files, skipped,
                              watched=self.watched)

    def damage(self) -> Damage | None:
        """What makes this collection unreadable, None when nothing does: the one check behind every "damaged".

        Reads the manifest, the records, the keyword index and the embedded vector store's database in that
        order (only those that exist) and reports the first that fails; a file is only read, never repaired.
        A damaged file can make its library raise anything, so any exception counts. CollectionGone when
        the collection was deleted meanwhile.
        """
        checks: list[tuple[Path, Callable[[], object]]] = [(self.path / MANIFEST, lambda: self.manifest)]
        if (self.path / RECORDS_FILE).exists():
            checks.append((self.path / RECORDS_FILE, lambda: self.records.status_counts()))
        if (self.path / KEYWORD).exists():
            checks.append((self.path / KEYWORD, lambda: self.keyword.doc_count()))
        for file, check in checks:
            try:
                check()
            except CollectionGone:
                raise
            except Exception as exc:
                self._still_here()
                return Damage(file, _reason(exc))
        database = self.path / "chroma" / "chroma.sqlite3"
        if not self.settings.chroma.host and database.exists():
            try:
                with contextlib.closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True,
                                                        timeout=10.0)) as db:
                    db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.Error as exc:    # only corruption: a read-only reader may meet an interrupted
                self._still_here()          # writer's hot journal, which Chroma itself rolls back on open
                if getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
                    return Damage(database, _reason(exc), vectors_only=True)
        return None

    def unreadable(self, exc: BaseException, *, store: str = "",
                   vectors: bool = False) -> CollectionDamaged | CollectionGone:
        """What an error met while reading this collection means: CollectionGone when it was deleted meanwhile,
        else CollectionDamaged with what `damage()` finds, or, when every file checks out, with the error itself
        against `store` (a file or folder of the collection; `vectors`: the vector store, whose loss still
        leaves the keyword index to search)."""
        if isinstance(exc, (CollectionGone, CollectionDamaged)):
            return exc
        try:
            damage = self.damage()
        except CollectionGone as gone:
            return gone
        return CollectionDamaged(self.name, damage or Damage(self.path / store, _reason(exc), vectors_only=vectors))

    def _still_here(self) -> None:
        """CollectionGone once the collection's folder or manifest is gone (deleted by another process), so
        that no store recreates files in the folder of a deleted collection."""
        if not (self.path / MANIFEST).exists():
            raise CollectionGone(self.name)

    def close(self) -> None:
        with self._preparing, self._open_lock:     # a store being loaded in the background is closed after it
            if self._records is not None:
                self._records.close()
                self._records = None
            for index in (self._keyword, self._sentences):
                if index is not None:
                    index.close()
            if self._client is not None:
                self._client.close()
                self._client = None
                self._vectors.clear()


LOCK_PROBE_WAITS_S = (0.01, 0.02, 0.04, 0.08)   # a probe holds the lock for microseconds: 150 ms is ample


@contextmanager
def _flocked(path: Path, busy: str) -> Iterator[None]:
    """An exclusive flock on `path` for the block, or IngestBusy(`busy`) when a process holds it. The kernel
    drops a flock with its process, so a killed holder leaves nothing to clean up. A lock held for a moment is
    waited out (`held`'s probe from another process, the TUI's poll among them), one held longer is not."""
    with open(path, "a+") as lock:
        for wait_s in (*LOCK_PROBE_WAITS_S, None):
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if wait_s is None:
                    raise IngestBusy(busy) from None
                time.sleep(wait_s)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def held(path: Path) -> bool:
    """Whether some process holds the flock of `path` (`_flocked`) right now."""
    if not path.exists():
        return False
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def _replace_file(path: Path, text: str) -> None:
    """Write `path` atomically (a kill never leaves half a file), readable and writable by whoever may read and
    write its folder: a temporary file is private (mode 0600), and a team's shared data dir needs the group's
    bits, which the folder has from the umask and the set-up (docs/guide.md: a team's vectors on a Chroma server)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), path.parent.stat().st_mode & 0o666)
        f.write(text)
    os.replace(tmp, path)


def _damage_or_gone(error: CollectionDamaged | CollectionGone) -> Damage:
    if isinstance(error, CollectionGone):
        raise error
    return error.damage


class CollectionRegistry:
    """The collections under one folder: `<data dir>/collections`, or another `root` (`ragtui eval` keeps its
    throwaway and kept indexes under `<data dir>/eval/collections`, where no query or listing looks)."""

    def __init__(self, settings: Settings, root: Path | None = None) -> None:
        self.settings = settings
        self.root = settings.data_dir / "collections" if root is None else root

    def names(self) -> list[str]:
        """Every collection, the damaged ones too: a folder holding a manifest, or a link in a collection's
        place (never followed: listed as damaged, so that it can be deleted)."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir()
                      if NAME_RE.fullmatch(p.name) and (p.is_symlink() or (p / MANIFEST).is_file()))

    def stamp(self) -> tuple[tuple[str, int, tuple[str, ...], bool], ...]:
        """What moves whenever a collection's summary can change, cheap enough to poll (a stat, a folder listing
        and a lock probe each): every collection's name, its manifest's write time (ingest state, models), its
        keyword index's generations (Whoosh writes a new `_MAIN_<n>.toc` at each commit: the chunk count's marker)
        and whether a folder is being watched for it."""
        out: list[tuple[str, int, tuple[str, ...], bool]] = []
        for name in self.names():
            folder = self.root / name
            if folder.is_symlink():
                out.append((name, 0, (), False))
                continue
            try:
                written = (folder / MANIFEST).stat().st_mtime_ns
            except OSError:             # deleted meanwhile
                written = 0
            try:
                tocs = tuple(sorted(e.name for e in os.scandir(folder / KEYWORD) if e.name.endswith(".toc")))
            except OSError:             # no keyword index yet
                tocs = ()
            out.append((name, written, tocs, held(folder / WATCH_LOCK)))
        return tuple(out)

    def exists(self, name: str) -> bool:
        path = self.root / validate_collection_name(name)
        return path.is_symlink() or (path / MANIFEST).is_file()

    def path(self, name: str) -> Path:
        """The folder of collection `name`: the name passes the one rule first, and the folder must be a folder
        inside the data dir, not a link, so no name or link reaches another directory (CollectionDamaged)."""
        path = self.root / validate_collection_name(name)
        outside = not path.resolve().is_relative_to(self.root.resolve())
        if path.is_symlink() or outside:
            where = f", leading outside {self.root}" if outside else ""
            raise CollectionDamaged(name, Damage(path, f"a link in place of a collection folder{where}; "
                                                       "links are never followed"))
        return path

    def create(self, name: str, topic: str = "") -> Collection:
        if self.exists(name):
            raise CollectionError(f"collection {name!r} already exists")
        path = self.path(name)
        path.mkdir(parents=True, exist_ok=True)
        manifest = {"name": name, "topic": topic, "uid": uuid.uuid4().hex,   # tells a recreated namesake apart
                    "created": timestamps.now(),
                    "models": [], "state": "empty"}
        (path / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        return Collection(self.settings, path)

    def open(self, name: str) -> Collection:
        if not self.exists(name):
            known = ", ".join(self.names()) or "none yet"
            raise CollectionError(f"no collection named {name!r} (collections: {known}); "
                                  f"create one with `ragtui ingest PATH -c {name}`")
        return Collection(self.settings, self.path(name))

    def delete(self, name: str) -> None:
        """Remove the collection's folder and, on a Chroma server, its vectors; refused while an ingest runs.

        Whoever holds the collection open closes it first (Workspace.delete_collection does). A link in the
        collection's place is removed itself: what it leads to is not the data dir's to delete.
        """
        link = self.root / validate_collection_name(name)
        if link.is_symlink():
            link.unlink()
            return
        collection = self.open(name)
        if collection.ingest_running():
            raise CollectionError(f"an ingest is writing into {name!r}; stop it before deleting the collection")
        try:
            models = collection.models
        except (OSError, ValueError):          # a damaged manifest: its folder still goes (embedded Chroma with it)
            models = []
        with open(collection.path / VECTOR_LOCK, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)      # no reader is inside Chroma while its files go
            self._remove(collection, models)

    def _remove(self, collection: Collection, models: list[str]) -> None:
        """Its vectors first: on a Chroma server that does not answer, nothing is removed (the folder kept
        without them would make a new collection of the same name find the old vectors)."""
        if self.settings.chroma.host:
            try:
                client = chroma_client(self.settings.chroma, collection.path / "chroma")
                existing = {c.name for c in client.list_collections()}
                for model in models:
                    if (in_chroma := collection.chroma_name(model)) in existing:
                        client.delete_collection(in_chroma)
            except Exception as exc:
                reason = exc.reason if isinstance(exc, VectorServerDown) else server_down(exc)
                if reason is None:
                    raise
                raise CollectionError(f"collection {collection.name!r} was not deleted: its vectors are on "
                                      f"the Chroma server at {server_address(self.settings.chroma)}, which is "
                                      f"not reachable ({reason}); delete it again once the server answers"
                                      ) from exc
        else:
            release_embedded(collection.path / "chroma")
        shutil.rmtree(collection.path)
