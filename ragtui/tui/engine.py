"""The one place the TUI calls the engine.

Widgets never import the engine's heavy modules (chromadb, whoosh, wn,
llama_index): everything goes through `Engine`, which imports them lazily and
off the event loop (`asyncio.to_thread`), so the first frame is painted before
any of them load and the UI keeps drawing while they do.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtui.config import Settings
from ragtui.events import Event
from ragtui.model import SessionSource


class EngineUnavailable(Exception):
    """A part of the engine this build does not have, or that failed to load; the message says which."""


@dataclass(frozen=True)
class CollectionView:
    """What the collections pane shows for one collection."""

    name: str
    topic: str = ""
    chunks: int = 0
    state: str = "ready"             # "ready" | "empty" | "ingesting" | "error"


@dataclass(frozen=True)
class SessionSummary:
    """One row of the history screen."""

    id: int
    query: str
    collections: tuple[str, ...]
    created: str
    stop_reason: str = ""
    sources: int = 0
    relevant: int = 0


@dataclass(frozen=True)
class DocumentView:
    """The text the source viewer shows, with the chunk's span in it."""

    text: str
    start: int
    end: int
    note: str = ""                   # why only part of the document is shown, if it is


async def _load(module: str) -> Any:
    try:
        return await asyncio.to_thread(importlib.import_module, module)
    except ImportError as exc:
        raise EngineUnavailable(f"{module} is not available: {exc}") from None


class Engine:
    """Thin async façade over the engine's public API, built from the settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def probe(self) -> Any:
        """Ollama's version and models (ragtui.ollama_api.OllamaStatus), or OllamaUnreachable."""
        from ragtui.ollama_api import probe

        return await asyncio.to_thread(probe, self.settings.ollama.host)

    async def wordnet_state(self) -> tuple[bool, str]:
        """Whether synonym expansion will run, and why not when it will not."""
        synonyms = self.settings.synonyms
        if not synonyms.enabled:
            return False, "synonyms.enabled = false"
        wordnet = await _load("ragtui.retrieve.wordnet")
        if await asyncio.to_thread(wordnet.installed, synonyms.lexicon, self.settings.data_dir):
            return True, synonyms.lexicon
        return False, f"{synonyms.lexicon} not installed (ragtui wordnet install)"

    async def warm_up(self) -> None:
        """Import the heavy engine modules in a thread after the first frame, so the first query starts fast."""
        research = await _load("ragtui.research")
        await asyncio.to_thread(research.preload)

    # --- collections -----------------------------------------------------------

    async def collections(self) -> list[CollectionView]:
        registry = (await _load("ragtui.collections")).CollectionRegistry(self.settings)
        infos = await asyncio.to_thread(registry.list)
        return [CollectionView(i.name, i.topic, i.chunks, i.state) for i in infos]

    async def create_collection(self, name: str, topic: str) -> None:
        registry = (await _load("ragtui.collections")).CollectionRegistry(self.settings)
        await asyncio.to_thread(registry.create, name, topic)

    def ingest(self, path: Path, collection: str) -> AsyncIterator[Event]:
        """Ingest events (IngestProgress, FileSkipped, IngestFinished) for one folder or file."""
        return self._ingest(path, collection)

    async def _ingest(self, path: Path, collection: str) -> AsyncIterator[Event]:
        pipeline = await _load("ragtui.ingest.pipeline")
        events = pipeline.ingest_paths(self.settings, collection, [path])
        try:
            async for event in events:
                yield event
        finally:
            await events.aclose()

    # --- research ---------------------------------------------------------------

    async def new_session(self, query: str, collections: list[str]) -> Any:
        research = await _load("ragtui.research")
        return research.ResearchSession(self.settings, query, collections)

    async def reopen(self, session_id: int) -> Any:
        research = await _load("ragtui.research")
        return await asyncio.to_thread(research.ResearchSession.reopen, self.settings, session_id)

    async def history(self) -> list[SessionSummary]:
        history = await _load("ragtui.history")
        store = history.HistoryStore(self.settings.data_dir)
        rows = await asyncio.to_thread(store.list_sessions)
        return [_summary(row) for row in rows]

    async def export_session(self, session_id: int) -> Path:
        """The session as Markdown with numbered sources, written under <data dir>/exports/."""
        history = await _load("ragtui.history")
        text = await asyncio.to_thread(history.HistoryStore(self.settings.data_dir).export_markdown, session_id)
        path = self.settings.data_dir / "exports" / f"session-{session_id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(path.write_text, text, "utf-8")
        return path

    async def delete_session(self, session_id: int) -> None:
        history = await _load("ragtui.history")
        await asyncio.to_thread(history.HistoryStore(self.settings.data_dir).delete, session_id)

    async def document(self, source: SessionSource) -> DocumentView:
        """The chunk inside its document's text (kept by the ingest); the chunk alone when that is gone."""
        chunk = source.chunk
        try:
            text = await asyncio.to_thread(_document_text, self.settings, chunk.meta)
        except Exception as exc:  # a moved, changed or unreadable file still leaves the chunk to show
            return DocumentView(chunk.text, 0, len(chunk.text), note=f"showing the chunk only: {exc}")
        start, end = chunk.meta.char_start, chunk.meta.char_end
        if text[start:end] != chunk.text:
            start = text.find(chunk.text)
            if start < 0:
                return DocumentView(chunk.text, 0, len(chunk.text),
                                    note="showing the chunk only: the document changed since this session")
            end = start + len(chunk.text)
        return DocumentView(text, start, end)


def _document_text(settings: Settings, meta: Any) -> str:
    """The extracted text of the chunk's file, as the ingest stored it."""
    from ragtui.collections import CollectionRegistry

    collection = CollectionRegistry(settings).open(meta.collection)
    try:
        found = collection.document(meta.source)
    finally:
        collection.close()
    if found is None:
        raise LookupError(f"{meta.source} is no longer indexed in {meta.collection}")
    return found[0]


def _summary(row: Any) -> SessionSummary:
    """ragtui.history.SessionSummary as the history screen shows it."""
    return SessionSummary(id=row.id, query=row.query, collections=tuple(row.collections), created=row.created_at,
                          stop_reason=row.stop_reason, sources=row.sources, relevant=row.relevant)
