"""The TUI's one door to the engine: `AsyncWorkspace`, and the few engine functions its widgets call.

Everything else in ragtui.tui imports only nouns (ragtui.model), events, settings
and leaf modules; what the TUI asks of the engine is listed here (a test holds it
to that). `AsyncWorkspace` is the `Workspace` as coroutines for Textual workers:
building it imports no heavy module (chromadb, whoosh, wn, llama_index) and opens
nothing, so the first frame is painted before any of them load. Blocking calls run
in threads (`asyncio.to_thread`), and the modules that pull in the heavy libraries
are first imported in a thread too, so the UI keeps drawing while they load.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING

from ragtui.config import Settings
from ragtui.history import HistoryUnusable
from ragtui.library import NAME_RULE, CollectionError, validate_collection_name
from ragtui.llm.citations import citation_spans, cited_numbers
from ragtui.llm.servers import configured_servers, probe_servers
from ragtui.llm.window import WINDOW_CHARS, best_window
from ragtui.page_render import CHUNK_COLOUR, QUOTE_COLOUR, Box, PagePart, RenderedPage, page_parts, render_part
from ragtui.research.plan import MAX_PART_CHARS, MAX_PARTS
from ragtui.retrieve.explain import details
from ragtui.workspace import DocumentView, Workspace

if TYPE_CHECKING:
    from ragtui.events import Event
    from ragtui.ingest.clusters import Cluster
    from ragtui.ingest.profile import CollectionProfile
    from ragtui.model.collection import CollectionInfo, IngestReport
    from ragtui.model.conversation import SessionSource, SessionSummary
    from ragtui.model.filters import SearchFilter
    from ragtui.model.servers import Server
    from ragtui.research.deep import ResearchRunner
    from ragtui.research.session import ResearchSession

__all__ = ["CHUNK_COLOUR", "MAX_PARTS", "MAX_PART_CHARS", "NAME_RULE", "QUOTE_COLOUR", "WINDOW_CHARS",
           "AsyncWorkspace", "Box", "CollectionError", "CollectionProfile", "DocumentView", "HistoryUnusable",
           "PagePart", "RenderedPage", "ResearchRunner", "ResearchSession", "best_window", "citation_spans",
           "cited_numbers", "cluster_lines", "configured_servers", "details", "histogram_title", "page_parts",
           "profile_lines", "recheck_line", "report_lines", "validate_collection_name"]


def report_lines(report: IngestReport) -> list[str]:
    """An ingest's closing report as plain text lines, as the CLI prints it."""
    from ragtui.ingest.report import report_lines

    return report_lines(report)


def profile_lines(profile: CollectionProfile) -> list[str]:
    """A collection's report as `collections info` prints it, but for the histogram and the clusters."""
    from ragtui.ingest.profile import profile_lines

    return profile_lines(profile)


def cluster_lines(clusters: list[Cluster]) -> list[str]:
    """A collection's entropy clusters, as `collections info` prints them."""
    from ragtui.ingest.profile import cluster_lines

    return cluster_lines(clusters)


def histogram_title(histogram: list[int]) -> str:
    """The title of a collection's entropy histogram drawn as bars."""
    from ragtui.ingest.profile import histogram_title

    return histogram_title(histogram)


def recheck_line(report: IngestReport) -> str:
    """What the re-check of the saved sessions citing the files it changed or removed found, in one line ("" when
    nothing was re-checked)."""
    from ragtui.ingest.report import recheck_line

    return "" if report.sessions_rechecked is None else recheck_line(report.sessions_rechecked,
                                                                     report.citations_stale)


class AsyncWorkspace:
    """The Workspace's operations as coroutines, for Textual workers."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.workspace = Workspace(settings)
        self.loaded = False      # whether the engine's modules are imported (the warm-up or a first call did it)

    def close(self) -> None:
        """Close what the workspace opened; called once the app has stopped."""
        self.workspace.close()

    async def probe(self) -> tuple[Server, ...]:
        """Each server the settings use (Ollama, the OpenAI-compatible chat and embedding servers), as it answers."""
        return await asyncio.to_thread(probe_servers, self.settings)

    async def wordnet_state(self) -> tuple[bool, str]:
        """Whether synonym expansion will run, and why not when it will not."""
        return await asyncio.to_thread(self.workspace.wordnet_state)

    async def warm_up(self) -> None:
        """Import the heavy engine modules in a thread after the first frame, so the first query starts fast."""
        await self._import(_preload)

    async def prepare(self, collections: list[str]) -> None:
        """Open the active collections' stores in a thread (Workspace.prepare). A failure is not reported
        here: the query that needs the store meets it and says so in its own words."""
        await self._import(_preload)
        try:
            await asyncio.to_thread(self.workspace.prepare, collections)
        except Exception:  # the next query reports what is wrong with the collection
            return

    async def _import(self, load: Callable[[], None]) -> None:
        """Run `load` in a thread: the heavy libraries come in through `ragtui.heavy`, one thread at a time."""
        await asyncio.to_thread(load)
        self.loaded = True

    # --- collections -----------------------------------------------------------

    async def collections(self) -> list[CollectionInfo]:
        return await asyncio.to_thread(self.workspace.list_collections)

    async def collections_stamp(self) -> object:
        """Changes whenever a collection's summary may have (another process ingested, deleted or created)."""
        return await asyncio.to_thread(self.workspace.collections_stamp)

    async def collection_profile(self, collection: str) -> CollectionProfile:
        """What `collections info` reports of the collection (Workspace.collection_profile)."""
        return await asyncio.to_thread(self.workspace.collection_profile, collection)

    async def create_collection(self, name: str, topic: str) -> None:
        await asyncio.to_thread(self.workspace.create_collection, name, topic)

    async def remove_files(self, collection: str, paths: list[str]) -> IngestReport:
        return await self.workspace.remove_files(collection, paths)

    async def rebuild_keyword(self, collection: str) -> int:
        return await self.workspace.rebuild_keyword(collection)

    async def ingest(self, path: Path, collection: str) -> AsyncGenerator[Event, None]:
        """Ingest events (IngestProgress, FileSkipped, IngestFinished) for one folder or file."""
        await self._import(_preload)
        async with aclosing(self.workspace.ingest([path], collection)) as events:
            async for event in events:
                yield event

    # --- research ---------------------------------------------------------------

    async def new_session(self, query: str, collections: list[str], *,
                          search_filter: SearchFilter | None = None) -> ResearchSession:
        await self._import(_preload)     # a query typed during the warm-up waits for it (instant after)
        return await asyncio.to_thread(self.workspace.new_session, query, collections, search_filter=search_filter)

    async def research(self, question: str, collections: list[str], *,
                       search_filter: SearchFilter | None = None) -> ResearchRunner:
        """A research run in a new session (`Workspace.research`)."""
        await self._import(_preload)
        return await asyncio.to_thread(self.workspace.research, question, collections, search_filter=search_filter)

    async def reopen(self, session_id: int) -> ResearchSession:
        await self._import(_preload)
        return await asyncio.to_thread(self.workspace.reopen, session_id)

    async def history_damage(self) -> str:
        """Why the history file cannot be used ("" when it can)."""
        return await asyncio.to_thread(self.workspace.history_damage)

    async def history(self) -> list[SessionSummary]:
        return await asyncio.to_thread(lambda: self.workspace.history.list_sessions())

    async def export_session(self, session_id: int, fmt: str = "markdown") -> Path:
        """The session as Markdown, BibTeX or CSL-JSON, written under <data dir>/exports/."""
        return await asyncio.to_thread(self.workspace.export_session, session_id, fmt)

    async def delete_session(self, session_id: int) -> None:
        await asyncio.to_thread(lambda: self.workspace.history.delete(session_id))

    async def document(self, source: SessionSource) -> DocumentView:
        """The chunk inside its document's text; the chunk alone (with a note) when that is gone."""
        return await asyncio.to_thread(self.workspace.document, source)

    async def page(self, source: SessionSource, part: PagePart) -> RenderedPage:
        """One page `source`'s chunk lies on, drawn with its chunk and quote boxed (ragtui.page_render); a
        RagtuiError saying why not (not a PDF, the file gone or changed, a page that cannot be drawn)."""
        def draw() -> RenderedPage:
            return render_part(self.workspace.source_pdf(source.chunk), part, source.quote)

        return await asyncio.to_thread(draw)


def _preload() -> None:
    from ragtui.research.session import preload

    preload()

