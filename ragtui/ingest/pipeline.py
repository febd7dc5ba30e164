"""The ingest engine: extract -> chunk -> entropy filter -> index -> embed, as an async iterator of events.

Write order, so that a kill -9 at any instant leaves something the next run repairs:

1. journal: the file's new chunks go into the records (status "indexing"), its old
   chunks and their embed status leave them, in one SQLite commit; its old vectors
   are deleted from every Chroma collection;
2. keyword index: the file's old entries are deleted and the new ones added in one
   Whoosh commit (a file new to the records has none to delete);
3. records: the file becomes "done";
4. embedding, in the background while later files are read and indexed: pending
   chunks are embedded, upserted into Chroma, then marked embedded for that model
   (so an interrupted embedding resumes where it stopped); a page read before its file was journaled again is
   not stored (one lock orders step 1 against these writes).

A run that does not end cleanly leaves the manifest state "ingesting"; the next run
then reconciles: files still "indexing" are finished from the journal, and each
store is brought to exactly what the records say (keyword index = chunks of "done"
files; each vector index = chunks marked embedded for its model). After an ingest
that could embed everything, Chroma and Whoosh hold the same chunk ids.

LlamaIndex's IngestionPipeline chains the node parser and the entropy filter; the
docstore and vector-store parts are not used (their upsert strategies delete or keep a changed
file's old chunks in ways that have bitten users: run-llama/llama_index issues #19276, #20823,
#14931): the records play the docstore, with the file path as the doc id,
and deletions by source are done here in every store.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any

from ragtui.config import Settings
from ragtui.events import Event, FileSkipped, IngestFinished, IngestProgress, Notice
from ragtui.ingest.discover import Entry, discover
from ragtui.ingest.disk_full import full_disk
from ragtui.ingest.extraction import Extraction, processes_for
from ragtui.ingest.reading import FileReader, Prepared
from ragtui.ingest.report import IngestTally
from ragtui.ingest.reuse import VectorReuse
from ragtui.ingest.threads import in_thread
from ragtui.library import KEYWORD, SENTENCES, Collection, CollectionDamaged
from ragtui.model.chunks import Chunk
from ragtui.model.collection import IngestReport
from ragtui.stores.records import DONE, INDEXING, SKIPPED, FileRecord

BATCH_CHUNKS = 2000          # chunks per keyword-index commit
BATCH_FILES = 500            # files per keyword-index commit
EMBED_PAGES = 8              # embed batches per Chroma write + journal commit (bounds work lost to a kill)
WRITE_APART_CHUNKS = 4096    # most chunks a write to a vector process stores at once (work lost to a kill too)
PROGRESS_EVERY_S = 0.25
# 2: folded text, HTML main content and heading paths, PDF outline headings, .gz and sniffed files,
#    chunks starting at sentence/word starts, byte entropy, dotted-leader TOC and index filter.
# 3: tables (HTML cells, PDF ruled tables), code fences (HTML <pre>) and list items kept whole or split
#    with the header row / fence repeated; .xls read.
# 4: a markdown chunk that starts at a heading (its window began on the blank line before it) has that
#    heading's path, not the previous section's.
EXTRACTION_VERSION = 4


async def ingest_paths(settings: Settings, collection: Collection, paths: Sequence[Path], *,
                       sync: bool = False, topic: str = "") -> AsyncGenerator[Event, None]:
    """Ingest files and folders into the open `collection`; `sync` drops files gone from the folders.

    Holds the collection's ingest lock throughout (IngestBusy when another ingest has it). A new
    `topic` is written only once the lock is held: a refused ingest changes nothing.
    """
    async for event in _IngestRun(settings, collection).execute(paths=paths, sync=sync, topic=topic):
        yield event


async def ingest_documents(settings: Settings, collection: Collection,
                           documents: Iterable[tuple[str, str]]) -> AsyncGenerator[Event, None]:
    """Ingest in-memory (source_id, text) documents through the same chunk/filter/embed/index path."""
    async for event in _IngestRun(settings, collection).execute(documents=documents):
        yield event


async def reembed(settings: Settings, collection: Collection, models: Sequence[str]) -> AsyncGenerator[Event, None]:
    """Embed every chunk of the collection again with these models, from its records (nothing is re-read):
    each model's vectors and "embedded" marks are dropped first, so vectors of the wrong dimension or
    values are replaced, not kept. Under the ingest lock, like an ingest; its events are an ingest's."""
    run = _IngestRun(settings, collection)
    run.models = list(dict.fromkeys(models))
    async for event in run.execute(reembed=True):
        yield event


async def remove_files(settings: Settings, collection: Collection, sources: Sequence[str]) -> IngestReport:
    """Drop these recorded files (an archive with its members) from the records and then every store, under the
    ingest lock (IngestBusy when an ingest holds it), as an ingest's --sync drops a file gone from its folder."""
    return await _IngestRun(settings, collection).remove_only(sources)


def signature(settings: Settings) -> str:
    """Everything that changes the chunks of unchanged bytes; a file indexed under another one is redone.

    EXTRACTION_VERSION stands for the code's own rules (extraction, chunk edges, filters);
    it goes up whenever they change what a file yields.
    """
    c, i = settings.chunk, settings.ingest
    return (f"x{EXTRACTION_VERSION}:{c.strategy}:{c.size_tokens}:{c.pdf_tokens}:{c.av_tokens}:{c.overlap_pct}:"
            f"{i.entropy_min}:{i.entropy_max}:{i.toc_ratio}")


class _IngestRun:
    def __init__(self, settings: Settings, collection: Collection) -> None:
        """CollectionDamaged when the collection cannot be read as it is (`Collection.damage()`): an ingest
        would only meet the damage halfway, in whichever store it opened first."""
        if (damage := collection.damage()) is not None:
            raise CollectionDamaged(collection.name, damage)
        self.settings = settings
        self.coll = collection
        self.records = collection.records
        self.report = IngestTally(collection.name, embedder="Ollama" if settings.embed.provider == "ollama"
                                  else "the embedding server")
        self.signature = signature(settings)
        self.models = settings.embed.all_models
        # Keep a sentence index (sentence-window retrieval): while the option is on, or once the collection has one.
        self.sentences = settings.strategies.sentence_window > 0 or collection.has_sentences
        self.down: dict[str, str] = {}          # model -> why its pass stopped for this run
        self.embed_left: dict[str, int] = {}    # model -> chunks still to embed (for the ETA)
        self.started = time.monotonic()
        self.files_total = 0
        self.files_done = 0
        self.chunks_read = 0                    # chunks of the files read so far (progress counts from the start)
        self.chunks_kept = 0                    # chunks of the unchanged files so far (not read again)
        self._chunks_at_embed = 0               # chunks_read when the last embedding pass counted what it had left
        self.embed_time = 0.0
        # Chunks whose vectors this run has made (stored or about to be), and when the page being embedded began:
        # the progress moves with each embedding call, not only when a page is stored.
        self.vectors_made = 0
        self._page: tuple[float, int] | None = None      # (start, chunks of the page done so far)
        self.current = ""
        self._last_progress = 0.0
        # Embedding runs beside extraction and indexing (`_embed_worker`); its events wait in a queue.
        self._events: asyncio.Queue[Event] = asyncio.Queue()
        self._more_done = asyncio.Event()       # a batch of files became "done": chunks to embed
        self._closing = False                   # no batch will follow: the worker stops once nothing is pending
        self._embedding: asyncio.Future[None] | None = None
        # Journal + vector deletes of a batch vs the worker's vector adds: one at a time, so a page embedded
        # from a file's old text can never land after the file's new chunks were journaled.
        self._stores_lock = threading.Lock()
        self.reuse = VectorReuse(collection, self._stores_lock)   # vectors a chunk of the same text takes
        self._apart = False                     # the vectors are written from a process of their own (_write_apart)

    # --- lifecycle -------------------------------------------------------------------------

    async def execute(self, paths: Sequence[Path] = (), sync: bool = False,
                      documents: Iterable[tuple[str, str]] | None = None,
                      topic: str = "", reembed: bool = False) -> AsyncGenerator[Event, None]:
        with self.coll.ingest_lock():
            clean = False
            try:
                unclean = self.coll.manifest.get("state") == "ingesting"
                if self.coll.keyword.outdated:  # built with an older analyzer: start over, refill from the records
                    self.coll.keyword.rebuild()
                    unclean = True
                self.coll.update_manifest(state="ingesting", **({"topic": topic} if topic else {}))
                self.report.reconciled = await in_thread(self._reconcile, unclean)
                if self.sentences and (unclean or not self.coll.has_sentences or self.coll.sentences.outdated):
                    await in_thread(self._rebuild_sentences)
                if reembed:
                    self._write_apart(len(await in_thread(self.records.files, DONE)))
                    await in_thread(self._drop_vectors)
                if documents is not None:
                    entries, skips, roots = [Entry(s, "", None, t) for s, t in documents], [], []
                else:
                    entries, skips, roots, self.report.ignored = await in_thread(
                        discover, paths, self.settings.ingest.ignore,
                        self.settings.ingest.follow_links_outside)
                self.files_total = len(entries)
                self._write_apart(len(entries))
                for skip in skips:
                    self.report.skipped.append((skip.source, skip.reason))
                    yield FileSkipped(skip.source, skip.reason)
                if sync:
                    await in_thread(self._sync, roots, {e.source for e in entries})
                async for event in self._process(entries):
                    yield event
                self._closing = True
                self._embed_more()
                began = time.monotonic()
                async for event in self._while(asyncio.ensure_future(in_thread(self._merge))):
                    yield event
                self.report.add_time("merge", time.monotonic() - began)
                assert self._embedding is not None
                async for event in self._while(self._embedding):
                    yield event
                yield self._progress_now()
                clean = True
            except Exception as exc:
                if (full := full_disk(exc, self.settings.data_dir, self.coll.path)) is not None:
                    raise full from None
                raise
            finally:
                await self._stop_embedding()
                self._finish(clean)
                await in_thread(self.coll.end_apart)
        yield IngestFinished(self.coll.name, self.report.freeze())

    async def remove_only(self, sources: Sequence[str]) -> IngestReport:
        """`remove_files`: the ingest's own steps around the removal (an unclean end first reconciled; the
        manifest "ingesting" meanwhile, so that a kill is repaired by the next run)."""
        with self.coll.ingest_lock():
            clean = False
            try:
                unclean = self.coll.manifest.get("state") == "ingesting"
                self.coll.update_manifest(state="ingesting")
                self.report.reconciled = await in_thread(self._reconcile, unclean)
                await in_thread(self._remove, sources)
                self.report.removed.extend(sources)
                clean = True
            finally:
                self._finish(clean)
        return self.report.freeze()

    def _write_apart(self, files: int) -> None:
        """A run of `ingest.vector_process_files` files or more writes an embedded Chroma's vectors from a process
        of their own (`Collection.serve_apart`), started here, on the event loop's thread, for the rest of it."""
        if not self._apart and not self.settings.chroma.host and files >= self.settings.ingest.vector_process_files:
            self.coll.serve_apart()
            self._apart = True

    def _finish(self, clean: bool) -> None:
        self.report.elapsed_s = time.monotonic() - self.started
        self.report.interrupted = not clean
        pending = any(self.records.pending_count(m) for m in self.models)
        self.report.needs_embedding = pending
        if clean:
            chunks = len(self.records.chunk_ids(DONE))
            state = "needs embeddings" if pending else ("ready" if chunks else "empty")
            self.coll.update_manifest(state=state, models=self._models_with_vectors())

    def _merge(self) -> None:
        """The closing merge of the keyword (and sentence) index: in a process of its own for a run whose
        vectors are written apart (ingest/merging.py), where it would otherwise starve the embedding pass."""
        if self._apart:
            from ragtui.ingest.merging import MergeProcessGone, merge_apart

            try:
                merge_apart([self.coll.path / KEYWORD, *([self.coll.path / SENTENCES] if self.sentences else [])])
                return
            except Exception as exc:       # the merge in one process, as a small ingest runs it, is the fallback
                why = str(exc) if isinstance(exc, MergeProcessGone) else \
                    f"the keyword merge's process failed ({type(exc).__name__}: {str(exc)[:300]})"
                self.report.warnings.append(f"{why}; the merge ran in the ingesting process")
        self.coll.keyword.merge()
        if self.sentences:
            self.coll.sentences.merge()

    def _models_with_vectors(self) -> list[str]:
        known = list(self.coll.models)
        for model in self.models:
            if model not in known and self.records.embedded_ids(model):
                known.append(model)
        return known

    # --- repair ----------------------------------------------------------------------------

    def _reconcile(self, full: bool) -> int:
        """Bring the stores to what the records say; `full` compares every id (after an unclean end)."""
        repaired = 0
        unfinished = [r.source for r in self.records.files(INDEXING)]
        if unfinished:
            chunks = self.records.chunks_of(unfinished)
            self.coll.keyword.replace_sources(unfinished, chunks)
            with self.coll.vector_access(write=True):
                for model in self._store_models():
                    self.coll.vectors(model).delete_ids([c.id for c in chunks])
            self.records.mark_done(unfinished)
            repaired += len(chunks)
        if not full:
            return repaired
        expected = self.records.chunk_ids(DONE)
        in_keyword = self.coll.keyword.ids()
        if extra := in_keyword - expected:
            repaired += self.coll.keyword.delete_ids(extra)
        if missing := expected - in_keyword:
            repaired += self.coll.keyword.replace_sources([], self.records.chunks_by_id(missing))
        for model in self._store_models():
            embedded = self.records.embedded_ids(model)
            with self.coll.vector_access(write=True):
                store = self.coll.vectors(model)
                in_store = store.ids()
                if extra := in_store - (embedded & expected):
                    store.delete_ids(sorted(extra))
                    repaired += len(extra)
            if lost := embedded - in_store:
                self.records.unmark_embedded(lost, model)
                repaired += len(lost)
        return repaired

    def _rebuild_sentences(self) -> None:
        """Refill the sentence index from the records: it is new, built with an older analyzer, or an unclean
        end may have left it behind the keyword index."""
        began = time.monotonic()
        index = self.coll.sentences
        index.rebuild()
        sources = [r.source for r in self.records.files(DONE)]
        for at in range(0, len(sources), BATCH_FILES):
            part = sources[at:at + BATCH_FILES]
            index.replace_sources([], self._sentences_of([(s, self.records.chunks_of([s])) for s in part], {}))
        self.report.add_time("sentences", time.monotonic() - began)

    def _sentences_of(self, docs: Iterable[tuple[str, Sequence[Chunk]]],
                      texts: dict[str, tuple[str, list[tuple[int, str, int]]]]) -> list[Chunk]:
        """The sentences of these files (source, chunks); their texts from `texts` or else the records."""
        from ragtui.ingest.sentences import file_sentences

        out: list[Chunk] = []
        for source, chunks in docs:
            found = texts.get(source) or self.records.document(source)
            if found is not None and chunks:
                out.extend(file_sentences(found[0], found[1], chunks))
        return out

    def _drop_vectors(self) -> None:
        """Forget this run's models' vectors, in the store and then in the records (so they are all pending)."""
        for model in self.models:
            with self.coll.vector_access(write=True):
                self.coll.drop_vectors(model)
            self.records.unmark_embedded(self.records.embedded_ids(model), model)

    def _store_models(self) -> list[str]:
        return list(dict.fromkeys([*self.coll.models, *self.models]))

    def _sync(self, roots: list[str], seen: set[str]) -> None:
        """Remove the files the collection holds from these folders that are no longer in them.

        A folder that was renamed or moved counts as the folder ingested now: when a file found
        here is recorded under a folder that no longer exists, every file recorded under that old
        folder is compared too, so one deleted before or after the rename is removed as well.
        """
        moved = {old.root for source in seen if (old := self.records.file(source)) is not None
                 and old.root and old.root not in roots and not Path(old.root).exists()}
        gone = sorted(self.records.top_sources([*roots, *moved]) - seen)
        if gone:
            self._remove(gone, spare=True)
            self.report.removed.extend(gone)

    def _remove(self, sources: Sequence[str], *, spare: bool = False) -> None:
        """Files leave the records first, then every store (reconciliation covers a kill in between); with
        `spare`, their vectors are kept for the rest of the run (a file moved or renamed takes them back)."""
        every = list(sources)
        for s in sources:
            every.extend(self.records.members(s))
        chunks = self.records.chunks_of(every)
        ids = [c.id for c in chunks]
        self.records.remove(every)
        self.coll.keyword.delete_sources(every)
        if self.sentences:
            self.coll.sentences.delete_sources(every)
        with self.coll.vector_access(write=True):
            for model in self._store_models():
                if spare:
                    self.reuse.keep(model, chunks)
                self.coll.vectors(model).delete_ids(ids)

    # --- extraction and indexing -------------------------------------------------------------

    async def _process(self, entries: list[Entry]) -> AsyncIterator[Event]:
        """Read and extract files in order (`reading.FileReader`: in worker processes when there are many,
        ahead of the file being recorded), commit them in batches."""
        processes = processes_for(self.settings, len(entries))
        extraction = Extraction(self.settings, self.coll.name, self.coll.path / "tmp", processes)
        try:
            async for event in self._extract_and_commit(entries, extraction):
                yield event
        finally:
            await in_thread(extraction.close)
        if extraction.broken:
            self.report.warnings.append("an extraction worker process died; the files after it were extracted "
                                        "in the ingesting process")

    async def _extract_and_commit(self, entries: list[Entry], extraction: Extraction) -> AsyncIterator[Event]:
        reader = FileReader(self.settings, self.records, self.signature, self.report)
        batch: list[Prepared] = []
        pending_chunks = 0
        async for prep in reader.prepared(entries, extraction):
            self.current = prep.entry.source
            for skip in prep.skips:
                self.report.skipped.append((skip.source, skip.reason))
                yield FileSkipped(skip.source, skip.reason)
            self.files_done += 1
            if prep.outcome == "unchanged":
                self.report.unchanged += 1
                source = prep.entry.source
                self.chunks_kept += sum(self.records.chunk_counts([source, *self.records.members(source)]).values())
            else:
                batch.append(prep)
                pending_chunks += sum(len(c) for _, c in prep.docs)
                self.chunks_read += sum(len(c) for _, c in prep.docs)
            if pending_chunks >= BATCH_CHUNKS or len(batch) >= BATCH_FILES:
                await in_thread(self._commit, batch)
                reader.committed(batch)
                batch, pending_chunks = [], 0
                self._embed_more()
            for event in self._embed_events():
                yield event
            if (progress := self._progress()) is not None:
                yield progress
        if batch:
            await in_thread(self._commit, batch)

    def _commit(self, batch: list[Prepared]) -> None:
        """Journal, index and mark done one batch of files (steps 1-3 of the write order)."""
        began = time.monotonic()
        docs = [d for p in batch for d in p.docs]
        fresh = {r.source for r, _ in docs}
        stale = sorted({s for p in batch for s in p.stale} | fresh)
        with self._stores_lock:
            recorded = self.records.recorded(stale)   # only these can be in the stores (a new file skips deletes)
            old_chunks = self.records.chunks_of(recorded)
            old_ids = [c.id for c in old_chunks]
            gone = [s for s in stale if s not in fresh]
            self.records.remove(gone)
            self.records.begin(docs, {k: v for p in batch for k, v in p.texts.items()})
            for p in batch:
                if p.record is not None:
                    self.records.put_file(p.record)
                for skip in p.skips:
                    if skip.source != p.entry.source:
                        self.records.put_file(FileRecord(skip.source, p.entry.root, container=p.entry.source,
                                                         status=SKIPPED, reason=skip.reason))
            if old_ids:
                wanted = {c.vector_key for _, chunks in docs for c in chunks}
                with self.coll.vector_access(write=True):
                    for model in self._store_models():
                        self.reuse.keep(model, [c for c in old_chunks if c.vector_key in wanted])
                        self.coll.vectors(model).delete_ids(old_ids)
        self.report.add_time("journal", time.monotonic() - began)
        began = time.monotonic()
        self.coll.keyword.replace_sources(recorded, [c for _, chunks in docs for c in chunks],
                                          {k: v for p in batch for k, v in p.tokens.items()})
        self.report.add_time("index", time.monotonic() - began)
        if self.sentences:
            began = time.monotonic()
            texts = {k: v for p in batch for k, v in p.texts.items()}
            self.coll.sentences.replace_sources(recorded, self._sentences_of(
                [(r.source, chunks) for r, chunks in docs], texts))
            self.report.add_time("sentences", time.monotonic() - began)
        self.records.mark_done(fresh)
        for p in batch:
            self.report.chunks_indexed += sum(len(c) for _, c in p.docs)
            if p.outcome == "added":
                self.report.added.append(p.entry.source)
            elif p.outcome == "updated":
                self.report.updated.append(p.entry.source)
            elif p.outcome == "duplicate":
                self.report.duplicates.append((p.entry.source, p.duplicate_of))

    # --- embedding ---------------------------------------------------------------------------

    def _embed_more(self) -> None:
        """A batch is done: wake the background embedding pass, starting it on the first batch.

        Embedding (an HTTP call) and the Chroma writes then overlap the
        extraction and indexing of the next files instead of pausing them.
        """
        self._more_done.set()
        if self._embedding is None:
            self._embedding = asyncio.ensure_future(self._embed_worker())

    async def _embed_worker(self) -> None:
        """Embed whatever is pending each time batches are done, until the run closes and nothing is left."""
        while True:
            await self._more_done.wait()
            self._more_done.clear()
            async for event in self._embed_pending():
                self._events.put_nowait(event)
            if self._closing and not self._more_done.is_set():
                return

    def _embed_events(self) -> list[Event]:
        """The background pass's events so far; its failure (an unusable embedding batch) is raised here."""
        if self._embedding is not None and self._embedding.done():
            self._embedding.result()
        events = []
        while not self._events.empty():
            events.append(self._events.get_nowait())
        return events

    async def _while(self, task: asyncio.Future[Any]) -> AsyncIterator[Event]:
        """The background pass's events until `task` ends; a failure is raised only once `task` has ended
        (store work in a thread is never left running under a caller that closes the stores)."""
        while not task.done():
            getter = asyncio.ensure_future(self._events.get())
            await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield getter.result()
            else:
                getter.cancel()
        await task
        for event in self._embed_events():
            yield event

    async def _stop_embedding(self) -> None:
        """At the end of the run, also an interrupted one: cancel the background pass and wait for it."""
        if self._embedding is not None and not self._embedding.done():
            self._embedding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._embedding

    async def _embed_pending(self) -> AsyncIterator[Event]:
        """Embed every chunk still without a vector, model by model (embed.extra_models: one more index per model)."""
        from ragtui.ingest.embedding import Embedder, EmbedUnavailable, ModelMissing
        from ragtui.stores.vector import VectorServerDown
        from ragtui.stores.vector_process import VectorProcessGone

        for model in self.models:
            if model in self.down:
                continue
            embedder: Embedder | None = None
            page = self.settings.embed.batch_size * EMBED_PAGES
            # Vectors made while the previous write runs wait for the next one, up to `most` chunks a write: in a
            # process of their own a write of 4,096 costs less per chunk than 16 of 256 and stops nothing else;
            # here a write holds Python's lock for its whole length (stores/vector_process.py), so one page.
            most = WRITE_APART_CHUNKS if self._apart else page
            self.embed_left[model] = await in_thread(self.records.pending_count, model)
            self._chunks_at_embed = self.chunks_read
            writing: asyncio.Future[Any] | None = None      # the previous write to Chroma, still running
            held: list[tuple[Chunk, Any]] = []              # vectors made, waiting for the next write
            held_reused: set[str] = set()
            last: Chunk | None = None                       # the last chunk embedded or held in this call
            try:
                while True:
                    chunks = await in_thread(self.records.pending, model, page, last)
                    if not chunks and not held:
                        break
                    if chunks:
                        last = chunks[-1]
                        began = time.monotonic()
                        try:
                            reused = await in_thread(self.reuse.found, model, chunks)
                            todo = [c for c in chunks if c.id not in reused]
                            if todo and embedder is None:
                                embedder = Embedder(self.settings, model)
                                await embedder.expect(await in_thread(self._dimension, model))
                            self._page = (began, 0)
                            made = await embedder.embed_chunks(todo, self._embedded_so_far) if embedder and todo else []
                        except (ModelMissing, EmbedUnavailable, VectorServerDown, VectorProcessGone) as exc:
                            self._page = None
                            yield self._model_down(model, exc)
                            break
                        fresh = dict(zip((c.id for c in todo), made, strict=True))
                        held.extend((c, reused[c.id] if c.id in reused else fresh[c.id]) for c in chunks)
                        held_reused.update(reused)
                        spent = time.monotonic() - began
                        self._page = None
                        self.vectors_made += len(chunks)
                        self.embed_time += spent
                        self.report.add_time("embed", spent)
                        if writing is not None and not writing.done() and len(held) < most:
                            continue
                    if writing is not None:
                        try:
                            await writing
                        except (VectorServerDown, VectorProcessGone) as exc:   # the finally meets it again
                            yield self._model_down(model, exc)
                            break
                    writing = self._store_later(model, held, held_reused)
                    held, held_reused = [], set()
                    if (progress := self._progress()) is not None:
                        yield progress
            finally:
                if writing is not None:
                    try:
                        await writing
                    except (VectorServerDown, VectorProcessGone) as exc:     # the last write: its chunks stay pending
                        if model not in self.down:
                            self._model_down(model, exc)
                if embedder is not None and embedder.split:
                    done, _ = self.report.split.get(model, (0, None))
                    self.report.split[model] = (done + embedder.split, embedder.context_tokens)

    def _store_later(self, model: str, held: list[tuple[Chunk, Any]], reused: set[str]) -> asyncio.Future[None]:
        """`_store_vectors` of the held vectors, in a thread, while the next ones are made."""
        return asyncio.ensure_future(in_thread(self._store_vectors, model, [c for c, _ in held],
                                               [v for _, v in held], reused))

    def _model_down(self, model: str, exc: Exception) -> Notice:
        """The `model` pass stops for this run: its embedder or its vector store cannot be used (`_skip_model`)."""
        from ragtui.ingest.embedding import DimensionMismatch
        from ragtui.library import reembed_command
        from ragtui.stores.vector import VectorServerDown

        why = str(exc)
        if isinstance(exc, DimensionMismatch):
            why += f"; replace them with {reembed_command(self.coll.name, model)}"
        if isinstance(exc, VectorServerDown):
            self.report.vectors_unreachable = exc.address
        return self._skip_model(model, why)

    def _skip_model(self, model: str, why: str) -> Notice:
        """No more `model` vectors this run (embedder or vector store unusable): its chunks stay pending for the
        next ingest; the warning goes into the report, and the returned notice to the front end."""
        self.down[model] = why
        self.embed_left[model] = 0
        self.report.warnings.append(f"{why}; the {model} pass is skipped, ingest continues")
        return Notice("warning", f"{why}; the {model} pass is skipped, ingest continues")

    def _embedded_so_far(self, chunks_done: int) -> None:
        """An embedding call of the current page returned: progress (at most every PROGRESS_EVERY_S)."""
        if self._page is not None:
            self._page = (self._page[0], chunks_done)
        if (progress := self._progress()) is not None:
            self._events.put_nowait(progress)

    def _dimension(self, model: str) -> int | None:
        with self.coll.vector_access():
            return self.coll.vectors(model).dimension()

    def _store_vectors(self, model: str, chunks: list[Chunk], vectors: Sequence[Any],
                       reused: frozenset[str] | set[str] = frozenset()) -> None:
        """Runs while the next page is embedded; marks the chunks embedded only once Chroma holds them.

        A chunk whose file was re-journaled since it was read (changed, or being
        replaced) is left out: its vector is of text the collection no longer
        holds; the new chunk is pending again once its file is done.
        """
        began = time.monotonic()
        with self._stores_lock:
            current = self.records.done_texts([c.id for c in chunks])
            keep = [(c, v) for c, v in zip(chunks, vectors, strict=True) if current.get(c.id) == c.text]
            if keep:
                with self.coll.vector_access(write=True):
                    self.coll.vectors(model).add([c for c, _ in keep], [v for _, v in keep])
                self.records.mark_embedded([c.id for c, _ in keep], model)
                if model not in (held := self.coll.models):    # queries embed with it from now on and search
                    self.coll.update_manifest(models=[*held, model])     # the part embedded so far
        self.report.chunks_embedded += len(keep)
        self.report.vectors_reused += sum(c.id in reused for c, _ in keep)
        self.embed_left[model] -= len(keep)
        self.report.add_time("vectors", time.monotonic() - began)

    # --- progress ----------------------------------------------------------------------------

    def _progress(self) -> IngestProgress | None:
        """Progress, at most every PROGRESS_EVERY_S."""
        if time.monotonic() - self._last_progress < PROGRESS_EVERY_S:
            return None
        return self._progress_now()

    def _progress_now(self) -> IngestProgress:
        now = self._last_progress = time.monotonic()
        made, embedding_s = self.vectors_made, self.embed_time
        if self._page is not None:                # a page half embedded counts what it has made so far
            made += self._page[1]
            embedding_s += now - self._page[0]
        embedded = max(self.report.chunks_embedded, made)
        rate = made / embedding_s if made and embedding_s else 0.0
        left = sum(self.embed_left.values()) - (self._page[1] if self._page is not None else 0)
        eta = estimate_eta(now - self.started - embedding_s, self.files_done, self.files_total,
                           max(left, 0) + self._embeds_to_come(), rate)
        chunks = self.chunks_kept + max(self.chunks_read, self.report.chunks_indexed)
        return IngestProgress(self.files_done, self.files_total, chunks, embedded, rate, eta, self.current)

    def _embeds_to_come(self) -> int:
        """Embeddings the pending counts do not hold yet, so the ETA covers the whole job: the chunks read
        since the last embedding pass counted, and the files still to read at the chunks per file so far."""
        models = sum(m not in self.down for m in self.models)
        files_left = self.files_total - self.files_done
        per_file = self.chunks_read / self.files_done if self.files_done else 0.0
        return models * (self.chunks_read - self._chunks_at_embed + round(per_file * files_left))


def estimate_eta(file_seconds: float, files_done: int, files_total: int, embed_left: int,
                 embed_rate: float) -> float | None:
    """Seconds left: the files still to read at the pace so far, plus the chunks still to embed at the
    embedding rate so far; None while either pace is unknown."""
    files_left = files_total - files_done
    if files_left and not files_done:
        return None
    if embed_left and not embed_rate:
        return None
    file_eta = file_seconds / files_done * files_left if files_left else 0.0
    return file_eta + (embed_left / embed_rate if embed_left else 0.0)
