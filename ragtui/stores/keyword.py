"""The keyword index of a collection: Whoosh with a stemming analyzer (`analysis`), BM25F scoring.

The chunk text and metadata are stored in the index, so keyword hits need no
second lookup and keyword-only retrieval works while embeddings are missing.
One searcher is kept open and refreshed only when a writer has committed
(perf-baselines.md: opening one per query is costly).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtui.model import Chunk, ChunkMeta

if TYPE_CHECKING:
    from whoosh.query import Query

WRITE_LOCK_TIMEOUT = 30.0
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
    )


class KeywordIndex:
    FIELD = "text"

    def __init__(self, path: Path) -> None:
        from whoosh import index

        self.path = path
        with _OPEN_LOCK:
            if index.exists_in(str(path)):
                self._ix = index.open_dir(str(path))
            else:
                path.mkdir(parents=True, exist_ok=True)
                self._ix = index.create_in(str(path), _schema())
        self._analyzer = self._ix.schema[self.FIELD].analyzer
        self._lock = threading.RLock()
        self._searcher: Any = None
        self._df_generation = -1      # the generation _df and _df_docs were read at
        self._df_docs = 0
        self._df: dict[str, int] = {}

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
    def generation(self) -> int:
        """Changes on every commit: the key for caches derived from the index (IDF)."""
        return int(self._ix.latest_generation())

    @property
    def outdated(self) -> bool:
        """The index was built with an older analyzer (its schema keeps the one it was built with)."""
        from ragtui.stores.analysis import analyzer

        return bool(self._analyzer != analyzer())

    def rebuild(self) -> None:
        """Start over empty with the current analyzer; the caller refills it from the records."""
        from whoosh import index

        with self._lock, _OPEN_LOCK:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None
            self._ix = index.create_in(str(self.path), _schema())
            self._analyzer = self._ix.schema[self.FIELD].analyzer

    def analyze(self, text: str) -> list[str]:
        """The index terms for `text` (folded, CJK as bigrams, lowercased, stop words dropped, stemmed)."""
        return [t.text for t in self._analyzer(text)]

    def doc_count(self) -> int:
        with self._lock:
            return int(self.searcher().doc_count())

    def doc_frequency(self, term: str) -> int:
        """Chunks containing an already-analyzed term ('instal', not 'install')."""
        with self._lock:
            return int(self.searcher().doc_frequency(self.FIELD, term))

    def frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(N, {term: df}) for the current generation, reading only terms not yet cached.

        RAGWeed caches IDF lazily per term; the cache is dropped as soon as the index
        commits a new generation (an ingest changed the collection).
        """
        with self._lock:
            generation = self.generation
            if generation != self._df_generation:
                self._df_generation, self._df_docs, self._df = generation, self.doc_count(), {}
            for term in terms:
                if term not in self._df:
                    self._df[term] = self.doc_frequency(term)
            return self._df_docs, {t: self._df[t] for t in terms}

    def search(self, query: Query, limit: int) -> list[tuple[Chunk, float]]:
        """BM25F hits, best first, as chunks with their raw scores."""
        with self._lock:
            results = self.searcher().search(query, limit=limit)
            return [(_to_chunk(hit.fields()), float(hit.score)) for hit in results]

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        with self._lock:
            s = self.searcher()
            out = []
            for cid in ids:
                fields = s.document(chunk_id=cid)
                if fields is not None:
                    out.append(_to_chunk(fields))
            return out

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

    def upsert(self, chunks: Iterable[Chunk]) -> int:
        """Add or replace chunks by id in one commit; returns how many were written."""
        n = 0
        with self._ix.writer(timeout=WRITE_LOCK_TIMEOUT) as w:
            for c in chunks:
                w.update_document(chunk_id=c.id, source=c.meta.source, text=c.text,
                                  meta=json.dumps(c.meta.to_dict()))
                n += 1
        return n

    def replace_sources(self, sources: Iterable[str], chunks: Iterable[Chunk]) -> int:
        """Drop every chunk of `sources`, then add `chunks`, in one commit (readers see before or after).

        Plain adds after the deletes are much faster than per-id updates; the chunks
        must belong to `sources` (ids derive from the source, so none can survive).
        """
        n = 0
        with self._ix.writer(timeout=WRITE_LOCK_TIMEOUT) as w:
            for s in sources:
                w.delete_by_term("source", s)
            for c in chunks:
                w.add_document(chunk_id=c.id, source=c.meta.source, text=c.text, meta=json.dumps(c.meta.to_dict()))
                n += 1
        return n

    def delete_sources(self, sources: Iterable[str]) -> int:
        with self._ix.writer(timeout=WRITE_LOCK_TIMEOUT) as w:
            return sum(w.delete_by_term("source", s) for s in sources)

    def delete_ids(self, ids: Iterable[str]) -> int:
        with self._ix.writer(timeout=WRITE_LOCK_TIMEOUT) as w:
            return sum(w.delete_by_term("chunk_id", i) for i in ids)

    def close(self) -> None:
        with self._lock:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None


def _to_chunk(fields: dict[str, Any]) -> Chunk:
    meta = json.loads(fields["meta"])
    return Chunk(id=fields["chunk_id"], text=fields["text"], meta=ChunkMeta.from_dict(meta))
