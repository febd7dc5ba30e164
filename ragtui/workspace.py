"""The engine as one object: what the CLI and the TUI open, use and close.

    async with Workspace(settings) as workspace:          # or: ws = Workspace(settings).open(); ...; ws.close()
        session = workspace.new_session("how do pumps start?", ["manuals"])
        async for event in session.run(): ...

A Workspace is the single owner of the engine's state for one data dir: the
collection registry, the collections it has opened (kept open between queries so
their Whoosh searchers, posting arrays and Chroma clients are reused), the history
store and the WordNet lexicon. Research sessions, retrieval, ingest, the source
viewer's documents and exports all go through it. Nothing opens until it is first
used, so building one costs nothing and imports no heavy library; methods that
do blocking I/O are plain functions, which the TUI runs in threads.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Iterable, Iterator, Sequence
from contextlib import aclosing, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ragtui import heavy
from ragtui.config import ConfigError, Settings
from ragtui.errors import RagtuiError, disk_full
from ragtui.history import HistoryStore
from ragtui.library import (
    MANIFEST,
    Collection,
    CollectionDamaged,
    CollectionError,
    CollectionGone,
    CollectionRegistry,
)
from ragtui.model.collection import CollectionInfo, IngestReport
from ragtui.model.retrieval import Mode, legs_of
from ragtui.paths import user_path
from ragtui.retrieve.wordnet import Lexicon
from ragtui.sanitize import one_line

if TYPE_CHECKING:
    from ragtui.bundle.write import DocumentHash
    from ragtui.citation_recheck import ChunksNow
    from ragtui.events import Event
    from ragtui.ingest.profile import CollectionProfile
    from ragtui.model.chunks import Chunk, ChunkMeta
    from ragtui.model.citation_check import SessionCheck
    from ragtui.model.conversation import Conversation, SessionSource
    from ragtui.model.filters import SearchFilter
    from ragtui.model.retrieval import Retrieval
    from ragtui.research.deep import ResearchRunner
    from ragtui.research.session import ResearchSession
    from ragtui.retrieve.hybrid_retriever import QueryEmbedder
    from ragtui.retrieve.why import WhyNot


Spans = tuple[tuple[int, int], ...]
Pages = tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class DocumentView:
    """The text the source viewer shows, with the chunk's span in it."""

    text: str
    start: int
    end: int
    note: str = ""                   # why only part of the document is shown, if it is
    chunks: Spans = ()               # (start, end) of every chunk of the document, in order
    pages: Pages = ()                # (start, label) of every page (PDF), in order


class Workspace:
    """The engine for one data dir: collections, retrieval, research sessions, history and ingest."""

    def __init__(self, settings: Settings, *, collections_root: Path | None = None) -> None:
        """`collections_root`: another folder of collections than `<data dir>/collections` (ragtui eval's own)."""
        self.settings = settings
        self.registry = CollectionRegistry(settings, collections_root)
        self.lexicon = Lexicon(settings.synonyms.lexicon, settings.data_dir)
        self._open: dict[str, tuple[str, Collection]] = {}   # name -> (manifest identity, open collection)
        self._history: HistoryStore | None = None
        self._lock = threading.Lock()    # the TUI calls in from worker threads
        self._preparing: list[threading.Thread] = []   # prepare_soon's threads, joined by close()

    # --- lifetime --------------------------------------------------------------------

    def open(self) -> Workspace:
        """For `ws = Workspace(settings).open()` ... `ws.close()`; everything opens on first use."""
        return self

    def close(self) -> None:
        """Close every open collection (searchers, Chroma clients, records); the workspace can be used again."""
        with self._lock:
            preparing, self._preparing = self._preparing, []
        interrupted = None
        try:
            for thread in preparing:   # it may still open a collection: wait for it, then close everything
                thread.join()
        except KeyboardInterrupt as exc:   # a second ctrl+c: still close what is open, then stop
            interrupted = exc
        with self._lock:
            opened, self._open = self._open, {}
        for _, collection in opened.values():
            collection.close()
        if interrupted is not None:
            raise interrupted

    def __enter__(self) -> Workspace:
        return self.open()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._close_after(exc)

    async def __aenter__(self) -> Workspace:
        return self.open()

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await asyncio.to_thread(self._close_after, exc)

    def _close_after(self, exc: BaseException | None) -> None:
        """Close; when an error is already on its way out and closing fails because the disk is full (Chroma
        flushes on close), the error on its way out is the one to report: it already says why."""
        try:
            self.close()
        except Exception as failure:
            if exc is None or not disk_full(failure):
                raise

    @property
    def history(self) -> HistoryStore:
        """The saved research sessions (created on first use)."""
        with self._lock:
            if self._history is None:
                self._history = HistoryStore(self.settings.data_dir)
            return self._history

    def history_damage(self) -> str:
        """Why the history file cannot be used ("" when it can): sessions then run unsaved."""
        from ragtui.errors import describe

        unusable = self.history.unusable
        return describe(unusable) if unusable is not None else ""

    # --- collections -----------------------------------------------------------------

    def collection(self, name: str) -> Collection:
        """The open collection `name`; CollectionError when there is none.

        Reopened when the collection was deleted and created again behind this
        workspace's back (its manifest's uid changed; `created` for collections made
        before uids), and the replaced one is closed. CollectionDamaged when its folder or
        manifest cannot be read.
        """
        with self._lock:
            fresh = self.registry.open(name)
            try:
                manifest = fresh.manifest
            except Exception as exc:  # JSON, UTF-8 and OS errors; unreadable() says which file and why
                raise fresh.unreadable(exc, store=MANIFEST) from None
            identity = str(manifest.get("uid") or manifest.get("created", ""))
            cached = self._open.get(name)
            if cached is None or cached[0] != identity:
                if cached is not None:
                    cached[1].close()   # the deleted collection's searcher and Chroma client
                self._open[name] = (identity, fresh)
            return self._open[name][1]

    def prepare(self, names: Sequence[str], *, vectors: bool = True, keyword: bool = True) -> None:
        """Open the stores these collections' queries read (Collection.prepare), so that the first query does
        not wait for them: at 100k chunks Chroma's index load is most of a first query. `vectors`, `keyword`:
        which legs' stores (a query in one mode reads only its legs')."""
        for name in names:
            collection = self.collection(name)
            collection.prepare(collection.models if vectors else [], keyword=keyword)

    def prepare_soon(self, names: Sequence[str], mode: Mode = "hybrid") -> None:
        """Start `prepare` for a query in `mode` in a background thread and return once chromadb is imported.
        A one-shot command's import of the rest of the engine (llama_index, about a second) then runs while
        Chroma loads its HNSW index, which needs only chromadb and lets Python threads run (2.4 s at 1M chunks).
        chromadb comes first, here: imports are one thread at a time (ragtui/heavy.py), and a thread that began
        with llama_index would hold the import lock, so the load would wait for it. A name that cannot be
        opened is left for the query, which says what is wrong with it; close() waits for the thread. With a
        Chroma server the server holds the index: only the keyword index is opened early (a server that hangs
        is then waited for once, by the query, not twice)."""
        vectors, keyword = legs_of(mode, keyword_enabled=self.settings.keyword.enabled)
        vectors = vectors and not self.settings.chroma.host
        if vectors:
            heavy.load("chromadb")

        def run() -> None:
            for name in names:
                try:
                    self.prepare([name], vectors=vectors, keyword=keyword)
                except Exception:  # the query that reads this collection meets the error and reports it
                    continue

        thread = threading.Thread(target=run, name="ragtui-prepare", daemon=True)
        with self._lock:
            self._preparing.append(thread)
            thread.start()

    def collection_names(self) -> list[str]:
        return self.registry.names()

    def list_collections(self) -> list[CollectionInfo]:
        """Every collection's summary, the damaged ones as "damaged" rows; one deleted meanwhile is left out."""
        infos = []
        for name in self.registry.names():
            try:
                infos.append(self.collection_info(name))
            except CollectionError:
                if self.registry.exists(name):
                    raise
                # deleted by another process since the folder was listed
        return infos

    def collections_stamp(self) -> object:
        """A value that changes whenever a collection's summary may have (CollectionRegistry.stamp): the TUI
        polls it to refresh its collections pane after another process ingested or deleted."""
        return self.registry.stamp()

    def collection_info(self, name: str) -> CollectionInfo:
        """The summary of `name`; a damaged collection's says "damaged" (with the file and the error) instead
        of failing (one whose folder or manifest cannot be read is not kept open)."""
        try:
            collection = self.collection(name)
        except CollectionDamaged as exc:
            return CollectionInfo(name, "", "", (), 0, "damaged", damaged=str(exc.damage))
        return collection.info()

    def collection_profile(self, name: str) -> CollectionProfile:
        """What `collections info` reports of `name`: its info alone, with the damage, when its stores cannot be
        read (damaged vectors alone still leave the records to read)."""
        from ragtui.ingest.profile import CollectionProfile, profile

        info = self.collection_info(name)
        try:
            collection = self.collection(name)
            damage = collection.damage()
        except CollectionDamaged as exc:
            return CollectionProfile(info, unreadable=str(exc.damage))
        if damage is not None and not damage.vectors_only:
            return CollectionProfile(info, unreadable=str(damage))
        return profile(info, collection.records, self.settings)

    def create_collection(self, name: str, topic: str = "") -> Collection:
        self.registry.create(name, topic).close()
        return self.collection(name)

    def delete_collection(self, name: str) -> None:
        """Close the collection if it is open here, then delete it (refused while an ingest writes into it)."""
        with self._lock:
            cached = self._open.pop(name, None)
        if cached is not None:
            cached[1].close()
        self.registry.delete(name)

    # --- retrieval and research ------------------------------------------------------

    async def retrieve(self, query: str, names: Sequence[str], *, mode: Mode = "hybrid",
                       synonyms: bool | None = None, search_filter: SearchFilter | None = None,
                       strategies: bool = True) -> Retrieval:
        """Hybrid retrieval over the named collections (CollectionError for an unknown name), within
        `search_filter` when given, through the retrieval strategies that are on unless `strategies` is False
        (a follow-up's typed words, which its standalone rewrite searches with them). A damaged collection,
        or one deleted since it was named, is left out with a notice; the others are searched."""
        from ragtui.research.strategies import search
        from ragtui.retrieve.pipeline import retrieve
        from ragtui.retrieve.sentence_window import sentence_run

        collections, notices = [], []
        for name in dict.fromkeys(names):
            try:
                collections.append(self.collection(name))
            except (CollectionDamaged, CollectionGone) as exc:
                notices.append(f"{exc}; it was not searched.")
        async def run(text: str, embed: QueryEmbedder | None) -> Retrieval:
            return await retrieve(self.settings, text, collections, lexicon=self.lexicon, mode=mode,
                                  synonyms=synonyms, embed=embed, search_filter=search_filter)

        if not collections:             # every named one was left out: the notices say why, not "none selected",
            return replace(await run(query, None), notices=notices)     # and no strategy asks the model
        sentences = sentence_run(self.settings, collections, mode=mode, top_k=self.settings.retrieve.top_k,
                                 search_filter=search_filter)
        found = await search(self.settings, query, run, most=self.settings.retrieve.annotate_max,
                             vectors=mode != "keyword", sentences=sentences) if strategies else await run(query, None)
        return replace(found, notices=[*notices, *found.notices]) if notices else found

    async def why_not(self, query: str, names: Sequence[str], path: str, *, mode: Mode = "hybrid",
                      synonyms: bool | None = None) -> list[WhyNot]:
        """What happened to the file `path` (`PATH:PAGE` for one page) for `query` in each named collection that
        has it (retrieve.why); a RagtuiError when none does."""
        from ragtui.retrieve.why import why_not

        collections = [self.collection(name) for name in dict.fromkeys(names)]
        return await why_not(self.settings, query, collections, path, lexicon=self.lexicon, mode=mode,
                             synonyms=synonyms)

    def new_session(self, query: str, names: Sequence[str], *,
                    search_filter: SearchFilter | None = None) -> ResearchSession:
        from ragtui.research.session import ResearchSession

        return ResearchSession(self.settings, query, names, history=self.history, retrieve=self.retrieve,
                               search_filter=search_filter, topic=self.topic)

    def research(self, question: str, names: Sequence[str], *, search_filter: SearchFilter | None = None,
                 max_rounds: int | None = None) -> ResearchRunner:
        """A research run over the named collections, in a new session (research/deep.py)."""
        from ragtui.research.deep import ResearchRunner

        return ResearchRunner(self.new_session(question, names, search_filter=search_filter), question,
                              max_rounds=max_rounds)

    def reopen(self, session_id: int) -> ResearchSession:
        """A saved session, ready for re-annotation or continuation (HistoryError when there is none)."""
        from ragtui.research.session import ResearchSession

        return ResearchSession.reopen(self.settings, session_id, history=self.history, retrieve=self.retrieve,
                                      topic=self.topic)

    def topic(self, name: str) -> str:
        """What collection `name` is about (its `--topic`), "" when it has none or cannot be read now (deleted
        or damaged since the session began: its prompts go without it)."""
        try:
            return self.collection(name).topic
        except (RagtuiError, OSError, ValueError):
            return ""

    def export_session(self, session_id: int, fmt: str = "markdown") -> Path:
        """The session in `fmt` (`export_text`), written under <data dir>/exports/."""
        from ragtui.bibliography.export import SUFFIXES

        text = self.export_text(session_id, fmt)
        path = self.settings.data_dir / "exports" / f"session-{session_id}{SUFFIXES[fmt]}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def export_text(self, session_id: int, fmt: str = "markdown") -> str:
        """The session as Markdown with numbered sources and its checked quotes, or its cited documents as
        BibTeX or CSL-JSON (ragtui.bibliography; a .bib file that could not be read is named in it)."""
        from ragtui.bibliography.export import bibliography, quote_lines
        from ragtui.bibliography.references import MetadataLookup

        if fmt == "markdown":
            quotes = quote_lines(self.history.load(session_id))
            return self.history.export_markdown(session_id) + ("\n" + "\n".join(quotes) if quotes else "")
        bib = self.settings.cite.bib_file
        lookup = MetadataLookup(user_path(bib) if bib else None, self._collection_if_readable)
        if lookup.bib_file is not None and not lookup.bib_file.is_file():
            raise ConfigError(f"config error: cite.bib_file = {bib!r}: no such file")
        return bibliography(self.history.load(session_id), fmt, lookup)

    def bundle(self, session_id: int) -> dict[str, Any]:
        """The session as a bundle a colleague can verify without the collection (`ragtui.bundle`)."""
        from ragtui.bundle.write import bundle

        return bundle(self.history.load(session_id), self._document_hash)

    def _document_hash(self, chunk: Chunk) -> DocumentHash:
        """The sha256 of a chunk's document when the chunk was ingested, as its metadata recorded it; for a chunk
        recorded without one, the collection's record of its file while that still holds the chunk unchanged;
        unknown otherwise. An archive's member is hashed by its text (its record names its container)."""
        import sqlite3

        from ragtui.bundle.write import DocumentHash
        from ragtui.ingest.extract import archive_of

        meta = chunk.meta
        collection = self._collection_if_readable(meta.collection)
        record, same = None, False
        try:
            if collection is not None:
                record = collection.records.file(meta.source)
                same = not meta.file_hash and any(c.text == chunk.text
                                                  for c in collection.records.chunks_by_id([chunk.id]))
        except (RagtuiError, OSError, sqlite3.Error):   # damaged since the session: the chunk's own record stands
            record, same = None, False
        member = bool(record.container) if record is not None else bool(archive_of(meta.source))
        digest = meta.file_hash or (record.hash if same and record is not None else "")
        return DocumentHash(digest, ("text" if member else "file") if digest else "")

    def _collection_if_readable(self, name: str) -> Collection | None:
        try:
            return self.collection(name)
        except RagtuiError:        # deleted or damaged since the session: the file name still names it
            return None

    def wordnet_state(self) -> tuple[bool, str]:
        """Whether synonym expansion will run, and why not when it will not."""
        from ragtui.retrieve.wordnet import WordNetBusy, installed

        synonyms = self.settings.synonyms
        if not synonyms.enabled:
            return False, "synonyms.enabled = false"
        try:
            if installed(synonyms.lexicon, self.settings.data_dir):
                return True, synonyms.lexicon
        except WordNetBusy:
            return False, f"{synonyms.lexicon}: WordNet is busy (being installed?)"
        return False, f"{synonyms.lexicon} not installed (ragtui wordnet install)"

    def document(self, source: SessionSource) -> DocumentView:
        """The chunk inside its document's text (kept by the ingest); the chunk alone when that is gone. A
        citation the latest re-check found moved opens the current text at its new place."""
        moved = source.citation
        if moved is not None and moved.chunk_id:
            try:
                now = self.chunk(source.chunk.meta.collection, moved.chunk_id)
            except RagtuiError:
                now = None
            if now is not None:
                return replace(self.document_of(now), note=f"the document changed since this session: this "
                                                           f"citation {moved.verdict}; showing it there")
        return self.document_of(source.chunk)

    def chunk(self, name: str, chunk_id: str) -> Chunk | None:
        """The indexed chunk `chunk_id` of collection `name` (CollectionError for an unknown collection), None
        when the collection holds no such chunk."""
        found = self.collection(name).records.chunks_by_id([chunk_id])
        return found[0] if found else None

    def document_of(self, chunk: Chunk) -> DocumentView:
        """The chunk inside its document's text, as `document` shows a session's source."""
        try:
            text, pages, spans = self._document_text(chunk.meta)
        except Exception as exc:  # a moved, changed or unreadable file still leaves the chunk to show
            return DocumentView(chunk.text, 0, len(chunk.text), note=f"showing the chunk only: {exc}")
        start, end = chunk.meta.char_start, chunk.meta.char_end
        if text[start:end] != chunk.span_text:
            start = text.find(chunk.span_text)
            if start < 0:
                return DocumentView(chunk.text, 0, len(chunk.text),
                                    note="showing the chunk only: the document changed since this session")
            end = start + len(chunk.span_text)
        return DocumentView(text, start, end, chunks=spans, pages=pages)

    def source_pdf(self, chunk: Chunk) -> Path:
        """The PDF `chunk` was ingested from, as it was then, for drawing its pages (ragtui.page_render); a
        RagtuiError saying why not for a document that is not a PDF, or a file gone or changed since."""
        import hashlib

        meta = chunk.meta
        if meta.format != "pdf" or meta.page_index < 0:
            raise RagtuiError(f"{chunk.label} is not a PDF ({meta.format or 'no format'}): it has no page to draw",
                              hint="its text is in the source viewer (Enter on the source in `ragtui`)")
        path = self.collection(meta.collection).original(meta.source)
        if path is None:
            raise RagtuiError(f"{meta.source}: the file it was ingested from is gone (moved, deleted, or inside "
                              "an archive)", hint="ingest it again to see its pages")
        digest = hashlib.sha256()
        try:
            with path.open("rb") as file:
                while block := file.read(1 << 20):
                    digest.update(block)
        except OSError as exc:
            raise RagtuiError(f"cannot read {path}: {exc.strerror or exc}") from None
        if meta.file_hash and digest.hexdigest() != meta.file_hash:
            raise RagtuiError(f"{path} changed since it was ingested: its pages may no longer hold the chunk",
                              hint="ingest it again and ask again")
        return path

    def _document_text(self, meta: ChunkMeta) -> tuple[str, Pages, Spans]:
        """The extracted text of the chunk's file as the ingest stored it, its pages and its chunks' spans
        (those that still match the text), for reading the document chunk by chunk and page by page."""
        collection = self.collection(meta.collection)
        found = collection.document(meta.source)
        if found is None:
            raise CollectionError(f"{meta.source} is no longer indexed in {meta.collection}")
        text, pages = found
        spans = sorted({(c.meta.char_start, c.meta.char_end) for c in collection.records.chunks_of([meta.source])
                        if text[c.meta.char_start:c.meta.char_end] == c.span_text})
        return text, tuple((start, label) for start, label, _ in pages), tuple(spans)

    # --- ingest ------------------------------------------------------------------------

    async def ingest(self, paths: Sequence[Path], name: str, *, topic: str = "",
                     sync: bool = False) -> AsyncGenerator[Event, None]:
        """Ingest files and folders into `name` (created if new; `topic` set when given); ragtui.events out. A path
        that names nothing is a usage error, raised before any collection is created."""
        from ragtui.ingest.discover import not_found
        from ragtui.ingest.pipeline import ingest_paths

        if absent := not_found(paths):
            raise RagtuiError(f"no such file or folder: {', '.join(one_line(str(p)) for p in absent)}",
                              hint="nothing was ingested", exit_code=2)
        from ragtui.events import IngestFinished

        collection = self._ingest_target(name, topic)
        async with aclosing(ingest_paths(self.settings, collection, paths, sync=sync, topic=topic)) as events:
            async for event in events:
                if isinstance(event, IngestFinished):
                    event = replace(event, report=await asyncio.to_thread(self._rechecked, event.report))
                yield event

    async def ingest_documents(self, name: str, documents: Iterable[tuple[str, str]]) -> AsyncGenerator[Event, None]:
        """Ingest in-memory (source id, text) documents into `name` (created if new)."""
        from ragtui.ingest.pipeline import ingest_documents

        collection = self._ingest_target(name, "")
        async with aclosing(ingest_documents(self.settings, collection, documents)) as events:
            async for event in events:
                yield event

    async def reembed(self, name: str, models: Sequence[str] = ()) -> AsyncGenerator[Event, None]:
        """Embed the chunks of collection `name` again from its records, with these models (default: those it
        has vectors for and those configured), replacing their vectors; ingest events out."""
        from ragtui.ingest.pipeline import reembed

        collection = self.collection(name)
        models = list(models) or list(dict.fromkeys([*collection.models, *self.settings.embed.all_models]))
        async with aclosing(reembed(self.settings, collection, models)) as events:
            async for event in events:
                yield event

    async def remove_files(self, name: str, paths: Sequence[str]) -> IngestReport:
        """Drop the files these paths name (`ingest.maintenance.files_named`: all of them must name some) from
        every store of collection `name`; the report lists them."""
        from ragtui.ingest.maintenance import files_named
        from ragtui.ingest.pipeline import remove_files

        collection = self.collection(name)
        sources = await asyncio.to_thread(files_named, collection, paths)
        report = await remove_files(self.settings, collection, sources)
        return await asyncio.to_thread(self._rechecked, report)

    async def rebuild_keyword(self, name: str) -> int:
        """Build collection `name`'s keyword index again from its records (readers keep the old one until the
        new one is in place); the chunks indexed."""
        from ragtui.ingest.maintenance import rebuild_keyword

        return await asyncio.to_thread(rebuild_keyword, self.collection(name))

    @contextmanager
    def watching(self, name: str, topic: str = "") -> Iterator[None]:
        """Collection `name` (created if new) marked as kept in step with a folder (`Collection.watch_lock`) for
        the block; IngestBusy when another process watches for it."""
        with self._ingest_target(name, topic).watch_lock():
            yield

    # --- citations against the documents as they are now ------------------------------------

    def verify_history(self, ids: Sequence[int] | None = None) -> list[SessionCheck]:
        """The citations of these saved sessions (every one when None) checked against their collections as
        they are now (ragtui.citation_recheck), each result stored in the history (HistoryError for an unknown
        id, before anything is stored)."""
        from ragtui.citation_recheck import recheck
        from ragtui.timestamps import now

        history = self.history
        chunks_now, at = self._chunks_now(), now()
        results = [recheck(conversation, chunks_now, at=at) for conversation in
                   history.load_each(history.session_ids() if ids is None else list(dict.fromkeys(ids)))]
        history.put_checks((r.session_id, r.checks) for r in results)
        return results

    def recheck(self, conversation: Conversation) -> SessionCheck:
        """`conversation`'s citations (a bundle's session, say) checked against the collections of this data dir
        as they are now, nothing stored."""
        from ragtui.citation_recheck import recheck
        from ragtui.timestamps import now

        return recheck(conversation, self._chunks_now(), at=now())

    def _chunks_now(self) -> ChunksNow:
        """Where a file's chunks are now, read from its collection's records (once per file for one re-check);
        None for a file that is no longer indexed, or whose collection was deleted (or, in a bundle, is named as
        no collection can be)."""
        from ragtui.library import NAME_RE
        from ragtui.stores.records import DONE

        seen: dict[tuple[str, str], Sequence[Chunk] | None] = {}

        def chunks_now(name: str, source: str) -> Sequence[Chunk] | None:
            if (name, source) not in seen:
                found = None
                if NAME_RE.fullmatch(name) and self.registry.exists(name):
                    records = self.collection(name).records
                    recorded = records.file(source)
                    if recorded is not None and recorded.status == DONE:
                        found = sorted(records.chunks_of([source]), key=lambda c: c.meta.chunk_index)
                seen[(name, source)] = found
            return seen[(name, source)]
        return chunks_now

    def _rechecked(self, report: IngestReport) -> IngestReport:
        """The report with the sessions citing a file it changed or removed re-checked (`verify_history`); when
        that fails (a history that cannot be read, another collection they cite damaged) the ingest still stands,
        and a warning says the sessions were not re-checked and why."""
        from ragtui.errors import describe

        changed = [*report.updated, *report.removed]
        if not changed:
            return report
        try:
            checked = self.verify_history(self.history.sessions_citing(report.collection, changed))
        except (RagtuiError, OSError) as exc:
            return replace(report, warnings=(*report.warnings, f"saved sessions not re-checked: {describe(exc)}"))
        return replace(report, sessions_rechecked=len(checked), citations_stale=sum(len(c.stale) for c in checked))

    def _ingest_target(self, name: str, topic: str) -> Collection:
        """The collection to ingest into, created (with `topic`) when new; an existing one's topic changes
        inside the ingest, once its lock is held, so a refused ingest leaves the manifest alone."""
        return self.collection(name) if self.registry.exists(name) else self.create_collection(name, topic)
