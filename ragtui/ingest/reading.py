"""Reading an ingest's files in order: read, hash, compare with the records, extract.

`FileReader.prepared` yields each file as a `Prepared`: unchanged, a
duplicate, skipped (with why), or new or changed with its documents' records,
chunks and keyword-index tokens ready to journal. Up to AHEAD_FILES files
(AHEAD_BYTES of input) are read and handed to the extraction
(`extraction.Extraction`, in worker processes when there are many) ahead of
the file being yielded, so the workers extract the next batch while the
ingest journals and indexes this one; files come out in the order given.
Nothing here writes to a store except `move_root` of an unchanged file whose
folder was renamed.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ragtui.config import Settings
from ragtui.ingest.discover import LEAVES_ROOT, Entry, NotRead, inside, read_regular
from ragtui.ingest.extract import Skip, format_of
from ragtui.ingest.extraction import AHEAD_BYTES, AHEAD_FILES, Extraction, Job, Result
from ragtui.ingest.report import IngestTally
from ragtui.ingest.threads import in_thread
from ragtui.model.chunks import Chunk
from ragtui.stores.records import DONE, DUPLICATE, INDEXING, SKIPPED, FileRecord, IngestRecords


@dataclass
class Prepared:
    """One file after extraction: what to journal, or why not."""

    entry: Entry
    record: FileRecord | None = None
    docs: list[tuple[FileRecord, list[Chunk]]] = field(default_factory=list)
    texts: dict[str, tuple[str, list[tuple[int, str, int]]]] = field(default_factory=dict)
    skips: list[Skip] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)     # sources whose chunks must leave the stores
    outcome: str = ""                                  # added | updated | unchanged | duplicate | skipped
    duplicate_of: str = ""
    digest: str = ""
    tokens: dict[str, list[str]] = field(default_factory=dict)    # chunk id -> its keyword-index terms


class FileReader:
    """Reads, hashes and extracts an ingest's files against the collection's records (`prepared`)."""

    def __init__(self, settings: Settings, records: IngestRecords, signature: str, report: IngestTally) -> None:
        self.settings = settings
        self.records = records
        self.signature = signature
        self.report = report
        # Digests of files read this run whose batch is not committed yet -> their sources (the records answer
        # for the others), so a copy of one of them is a duplicate too.
        self.hashes: dict[str, str] = {}

    async def prepared(self, entries: Iterable[Entry], extraction: Extraction) -> AsyncIterator[Prepared]:
        """Each entry, in order, read, compared with the records and extracted (the time spent waiting for
        it counts as the report's "extract" stage)."""
        ahead: deque[tuple[Prepared, tuple[Job, Any] | None]] = deque()
        upcoming = iter(entries)
        bytes_ahead = 0
        while True:
            while len(ahead) < AHEAD_FILES and bytes_ahead < AHEAD_BYTES and (
                    entry := next(upcoming, None)) is not None:
                began = time.monotonic()
                prep, job = await in_thread(self._prepare, entry)
                ahead.append((prep, extraction.submit(job) if job is not None else None))
                bytes_ahead += len(job.data) if job is not None else 0
                self.report.add_time("extract", time.monotonic() - began)
            if not ahead:
                return
            prep, handle = ahead.popleft()
            if handle is not None:
                began = time.monotonic()
                bytes_ahead -= len(handle[0].data)
                self._extracted(prep, await in_thread(extraction.result, handle))
                self.report.add_time("extract", time.monotonic() - began)
            yield prep

    def committed(self, batch: Iterable[Prepared]) -> None:
        """These files' batch is committed: the records know their digests now."""
        for p in batch:
            if self.hashes.get(p.digest) == p.entry.source:
                del self.hashes[p.digest]

    def _read(self, entry: Entry) -> bytes:
        if entry.text is not None:
            return entry.text.encode("utf-8")
        assert entry.path is not None
        if not self.settings.ingest.follow_links_outside and not inside(entry.path, Path(entry.root)):
            raise NotRead(LEAVES_ROOT)              # replaced by such a link after discovery
        return read_regular(entry.path, self.settings.ingest.max_file_mb)

    def _prepare(self, entry: Entry) -> tuple[Prepared, Job | None]:
        """Read, hash, compare with the records; what is new or changed comes back with its extraction job."""
        prep = Prepared(entry)
        try:
            data = self._read(entry)
        except NotRead as exc:
            prep.skips.append(Skip(entry.source, str(exc)))
            prep.record = FileRecord(entry.source, entry.root, status=SKIPPED, reason=str(exc))
            prep.outcome = "skipped"
            return prep, None
        digest = hashlib.sha256(data).hexdigest()
        old = self.records.file(entry.source)
        if old and old.root and entry.root and old.root != entry.root and Path(old.root).exists():
            reason = (f"name clash: {entry.source} is already in the collection from {old.root}; "
                      "ingest this folder into another collection")
            prep.skips.append(Skip(entry.source, reason))
            prep.outcome = "skipped"
            return prep, None
        original = None if entry.text is not None else (        # in-memory documents keep their own ids
            self.hashes.get(digest) or self.records.indexed_source_with_hash(digest, entry.source))
        if old and old.hash == digest and old.signature == self.signature and (
                old.status == DONE or (old.status == DUPLICATE and original)):
            prep.outcome = "unchanged"
            if old.root != entry.root and entry.root:     # its folder was renamed (the old one is gone)
                self.records.move_root(entry.source, entry.root)
            if old.format == "zip":
                prep.skips = [Skip(m.source, m.reason) for m in self.records.members_in(entry.source, SKIPPED)]
            return prep, None
        if old:
            prep.stale = [old.source, *self.records.members(old.source)]
        prep.record = FileRecord(entry.source, entry.root, hash=digest, size=len(data), signature=self.signature)
        if original and original != entry.source:
            prep.outcome, prep.duplicate_of = "duplicate", original
            prep.record = replace(prep.record, status=DUPLICATE, reason=f"same bytes as {original}")
            return prep, None
        self.hashes[digest] = entry.source
        prep.digest = digest
        prep.outcome = "updated" if old and old.status == DONE else "added"
        job = Job(entry.source, digest, text=entry.text) if entry.text is not None else Job(entry.source, digest, data)
        return prep, job

    def _extracted(self, prep: Prepared, result: Result) -> None:
        """What the extraction of a prepared file gave: its documents' records and chunks, or why not."""
        stamp = prep.record
        assert stamp is not None
        if result.whole_file_skipped:
            prep.skips = result.skips
            prep.record = replace(stamp, status=SKIPPED, reason=result.skips[0].reason)
            prep.outcome = "skipped"
            return
        prep.skips.extend(result.skips)
        prep.record = (FileRecord(stamp.source, stamp.root, hash=stamp.hash, size=stamp.size, format="zip",
                                  signature=self.signature, status=DONE)
                       if format_of(prep.entry.source) == "zip" else None)
        for doc in result.documents:
            member = doc.source != prep.entry.source
            dropped = doc.dropped
            self.report.filtered.update(dropped)
            if dropped and sum(dropped.values()) >= len(doc.chunks):   # all or most of the file: say which and why
                self.report.mostly_filtered.append((doc.source, len(doc.chunks), dropped.copy()))
            prep.docs.append((FileRecord(doc.source, prep.entry.root, container=prep.entry.source if member else "",
                                         hash=doc.file_hash, size=len(doc.text) if member else stamp.size,
                                         format=doc.format, signature=self.signature, status=INDEXING,
                                         chunks=len(doc.chunks),
                                         filtered=json.dumps(dict(dropped)) if dropped else ""), doc.chunks))
            prep.texts[doc.source] = (doc.text, doc.pages)
            prep.tokens.update(zip((c.id for c in doc.chunks), doc.tokens, strict=True))
