"""Extraction, chunking, filtering and keyword analysis of one file, in this process or in a worker process.

This is the part of an ingest that needs no store: the bytes already read and
hashed go in, the documents' chunks (with their keyword-index tokens) come out.
With `ingest.workers` set and enough files, it runs in a pool of spawned
processes while the ingesting process journals and writes the keyword index,
so a second core extracts the next files while the index is written.

Files are submitted in order and their results taken in the same order, so a
run gives the same chunks, records and report however many workers it uses.
At most `AHEAD_FILES` files (and `AHEAD_BYTES` of input) are in flight, which
bounds the memory held for files read ahead. A worker that dies (a converter
crashing the interpreter) breaks the pool: the files still in flight are then
extracted in this process, as without workers, with a warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import sys
from collections import Counter
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from ragtui.config import Settings
from ragtui.ingest.extract import extract
from ragtui.ingest.extracted import Extracted, Skip
from ragtui.model.chunks import Chunk
from ragtui.spawning import spawn_context

AHEAD_FILES = 64            # files read and handed to the workers ahead of the one being recorded (a batch)
AHEAD_BYTES = 32 * 2**20    # ... and at most this much of their input
POOL_MIN_FILES = 100        # fewer files than this are extracted in the ingesting process (a worker's start
                            # costs ~1-2 CPU-s of imports, the extraction of a few hundred chunks)


def member_digest(text: str) -> str:
    """The hash an archive's member is recorded with: the sha256 of its extracted text (a member has no file of
    its own to hash; a file's hash is that of its bytes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def processes_for(settings: Settings, files: int) -> int:
    """Extraction processes for a run of this many files (none for a few: a worker's start costs more)."""
    return settings.ingest.workers if files >= POOL_MIN_FILES else 0


@dataclass
class Job:
    """One file to extract: its bytes as read (or an in-memory document's text) and their sha256."""

    source: str
    digest: str
    data: bytes = b""
    text: str | None = None


@dataclass
class Document:
    """One extracted document (a zip gives several) with its kept chunks and their index tokens."""

    source: str
    text: str
    format: str
    file_hash: str
    pages: list[tuple[int, str, int]]
    chunks: list[Chunk]
    tokens: list[list[str]]          # the keyword analyzer's terms of each chunk, in order
    dropped: Counter[str] = field(default_factory=Counter)     # chunks filtered out, per reason


@dataclass
class Result:
    documents: list[Document] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    whole_file_skipped: bool = False         # the file itself could not be read as any document


class _Worker:
    """What one process needs to extract: the settings, the LlamaIndex pipeline, the keyword analyzer."""

    def __init__(self, settings: Settings, collection: str, workdir: Path) -> None:
        from llama_index.core.ingestion import IngestionPipeline

        from ragtui.ingest.transforms import ChunkParser, EntropyFilter
        from ragtui.stores.analysis import analyzer

        self.settings = settings
        self.collection = collection
        self.workdir = workdir
        self.filter = EntropyFilter.from_settings(settings)
        self.pipeline = IngestionPipeline(
            transformations=[ChunkParser.from_settings(settings), self.filter], disable_cache=True)
        self.analyzer = analyzer()

    def run(self, job: Job) -> Result:
        if job.text is not None:
            found: list[Extracted | Skip] = [Extracted(job.source, job.text, "txt")]
        else:
            # converters get the bytes read, never the path again (it may have been swapped since)
            found = extract(job.source, job.data, self.settings.ingest, self.workdir)
        result = Result()
        if len(found) == 1 and isinstance(found[0], Skip) and found[0].source == job.source:
            result.skips, result.whole_file_skipped = [found[0]], True
            return result
        for item in found:
            if isinstance(item, Skip):
                result.skips.append(item)
            else:
                result.documents.append(self._document(item, job))
        return result

    def _document(self, doc: Extracted, job: Job) -> Document:
        from ragtui.ingest.transforms import to_document
        from ragtui.stores.nodes import node_to_chunk

        member = doc.source != job.source           # a zip member hashes its own text
        file_hash = member_digest(doc.text) if member else job.digest
        nodes = self.pipeline.run(documents=[to_document(self.collection, doc, file_hash)])
        chunks = [node_to_chunk(n) for n in nodes]
        dropped = self.filter.take_dropped(doc.source)
        return Document(doc.source, doc.text, doc.format, file_hash, [(p.start, p.label, p.index) for p in doc.pages],
                        chunks, [[t.text for t in self.analyzer(c.text)] for c in chunks], dropped)


_WORKER: _Worker | None = None


def _start_worker(settings: Settings, collection: str, workdir: Path) -> None:
    """A pool process's initializer: nothing it prints may reach the terminal (the TUI owns it)."""
    global _WORKER
    sys.stdout = sys.stderr = io.StringIO()
    _WORKER = _Worker(settings, collection, workdir)


def _run_in_worker(job: Job) -> Result:
    assert _WORKER is not None
    return _WORKER.run(job)


class Extraction:
    """Extracts jobs in a worker pool (`processes` > 0) or in this process; results come in submission order."""

    def __init__(self, settings: Settings, collection: str, workdir: Path, processes: int) -> None:
        self._args = (settings, collection, workdir)
        self._local: _Worker | None = None
        self._pool: ProcessPoolExecutor | None = None
        self.broken = False                  # a worker died: the rest runs in this process
        if processes > 0:
            self._pool = ProcessPoolExecutor(processes, mp_context=spawn_context(),
                                             initializer=_start_worker, initargs=self._args)

    def submit(self, job: Job) -> tuple[Job, Future[Result] | None]:
        """Start a job (in a worker when there is a pool); `result` of the returned handle gives its Result."""
        if self._pool is None or self.broken:
            return job, None
        try:
            return job, self._pool.submit(_run_in_worker, job)
        except BrokenProcessPool:
            self.broken = True
            return job, None

    def result(self, handle: tuple[Job, Future[Result] | None]) -> Result:
        """The job's Result, waiting for its worker (blocking: call it from a thread)."""
        job, future = handle
        if future is not None:
            try:
                return future.result()
            except BrokenProcessPool:
                self.broken = True
        if self._local is None:
            self._local = _Worker(*self._args)
        return self._local.run(job)

    def close(self) -> None:
        if self._pool is not None:
            with contextlib.suppress(Exception):
                self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
