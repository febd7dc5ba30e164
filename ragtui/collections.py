"""Named collections: one folder each under the data dir, holding its manifest and its indexes.

    <data_dir>/collections/<name>/
        collection.json   manifest: topic, created, embedding models, ingest state
        whoosh/           keyword index (stores.keyword)
        chroma/           embedded Chroma (absent when [chroma] host points at a server)
        records.sqlite3   ingest records and journal (ingest.records)
        ingest.lock       held (flock) by the ingest writing into the collection

Stores open lazily, so listing collections never imports chromadb.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import tempfile
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragtui.config import Settings
from ragtui.ingest.records import RECORDS_FILE, IngestRecords
from ragtui.model import CollectionState
from ragtui.stores.keyword import KeywordIndex
from ragtui.stores.vector import VectorIndex, chroma_client, chroma_name, release_embedded

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
MANIFEST = "collection.json"
LOCK_FILE = "ingest.lock"


class CollectionError(Exception):
    """A collection that cannot be created, found or removed; the message says what to do."""


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    topic: str
    created: str
    models: tuple[str, ...]          # embedding models whose vectors the collection holds
    chunks: int                      # chunks in the keyword index (every chunk is there)
    state: CollectionState
    files: int = 0                   # files indexed (zip members count, zips themselves do not)
    skipped: int = 0                 # files skipped with a reason


class Collection:
    def __init__(self, settings: Settings, path: Path) -> None:
        self.settings = settings
        self.path = path
        self.name = path.name
        self._keyword: KeywordIndex | None = None
        self._open_lock = threading.Lock()   # retrieval legs run in threads and may open the stores at once
        self._vectors: dict[str, VectorIndex] = {}
        self._client: Any = None
        self._records: IngestRecords | None = None

    # --- manifest ----------------------------------------------------------------

    @property
    def manifest(self) -> dict[str, Any]:
        return json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))

    def update_manifest(self, **fields: Any) -> dict[str, Any]:
        """Merge fields into the manifest; written atomically so a kill never leaves half a file."""
        data = {**self.manifest, **fields}
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".manifest-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        os.replace(tmp, self.path / MANIFEST)
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
                self._keyword = KeywordIndex(self.path / "whoosh")
            return self._keyword

    def vectors(self, model: str) -> VectorIndex:
        if model not in self._vectors:
            if self._client is None:
                self._client = chroma_client(self.settings.chroma, self.path / "chroma")
            prefix = f"ragtui-{self.name}" if self.settings.chroma.host else "chunks"
            self._vectors[model] = VectorIndex(self._client, chroma_name(prefix, model), model)
        return self._vectors[model]

    @property
    def records(self) -> IngestRecords:
        if self._records is None:
            self._records = IngestRecords(self.path)
        return self._records

    def document(self, source: str) -> tuple[str, list[tuple[int, str, int]]] | None:
        """The extracted text of an indexed file, with its (start, label, index) pages, for the source viewer.

        A chunk's char_start/char_end point into this text; None when the file is not indexed.
        """
        if not (self.path / RECORDS_FILE).exists():
            return None
        return self.records.document(source)

    def ingest_running(self) -> bool:
        """Whether some process holds the ingest lock of this collection right now."""
        lock = self.path / LOCK_FILE
        if not lock.exists():
            return False
        with open(lock, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False

    @property
    def state(self) -> CollectionState:
        """The manifest's state, except that an ingest nobody runs any more reads as "interrupted"."""
        state: CollectionState = self.manifest.get("state") or "empty"
        if state == "ingesting" and not self.ingest_running():
            return "interrupted"
        return state

    def info(self) -> CollectionInfo:
        manifest = self.manifest
        chunks = self.keyword.doc_count() if (self.path / "whoosh").exists() else 0
        files = skipped = 0
        if (self.path / RECORDS_FILE).exists():
            counts = self.records.status_counts()
            files, skipped = counts.get("done", 0), counts.get("skipped", 0)
        return CollectionInfo(self.name, str(manifest.get("topic", "")), str(manifest.get("created", "")),
                              tuple(manifest.get("models", [])), chunks, self.state, files, skipped)

    def close(self) -> None:
        if self._records is not None:
            self._records.close()
            self._records = None
        if self._keyword is not None:
            self._keyword.close()
        if self._client is not None:
            self._client.close()
            self._client = None
            self._vectors.clear()


class CollectionRegistry:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = settings.data_dir / "collections"

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / MANIFEST).is_file())

    def exists(self, name: str) -> bool:
        return (self.root / name / MANIFEST).is_file()

    def create(self, name: str, topic: str = "") -> Collection:
        if not NAME_RE.match(name):
            raise CollectionError(f"invalid collection name {name!r}: use 1-63 letters, digits, '-' or '_', "
                                  "starting with a letter or digit")
        if self.exists(name):
            raise CollectionError(f"collection {name!r} already exists")
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        manifest = {"name": name, "topic": topic, "uid": uuid.uuid4().hex,   # tells a recreated namesake apart
                    "created": datetime.now(UTC).isoformat(timespec="seconds"),
                    "models": [], "state": "empty"}
        (path / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        return Collection(self.settings, path)

    def open(self, name: str) -> Collection:
        if not self.exists(name):
            known = ", ".join(self.names()) or "none yet"
            raise CollectionError(f"no collection named {name!r} (collections: {known}); "
                                  f"create one with `ragtui ingest PATH -c {name}`")
        return Collection(self.settings, self.root / name)

    def open_or_create(self, name: str, topic: str = "") -> Collection:
        return self.open(name) if self.exists(name) else self.create(name, topic)

    def list(self) -> list[CollectionInfo]:
        out = []
        for name in self.names():
            collection = self.open(name)
            try:
                out.append(collection.info())
            finally:
                collection.close()
        return out

    def delete(self, name: str) -> None:
        collection = self.open(name)
        if collection.ingest_running():
            raise CollectionError(f"an ingest is writing into {name!r}; stop it before deleting the collection")
        models = collection.models
        collection.close()
        if self.settings.chroma.host:
            client = chroma_client(self.settings.chroma, collection.path / "chroma")
            existing = {c.name for c in client.list_collections()}
            for model in models:
                if (in_chroma := chroma_name(f"ragtui-{name}", model)) in existing:
                    client.delete_collection(in_chroma)
        else:
            release_embedded(collection.path / "chroma")
        shutil.rmtree(collection.path)
