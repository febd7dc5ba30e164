"""Building blocks for research-session tests: chunks, a retrieval stage that returns them, and sessions over it.

The retrieval stage is injected (it is not the LLM); every LLM call still goes over
HTTP to the fake Ollama server.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtui.config import Settings
from ragtui.history import HistoryStore
from ragtui.model.chunks import Chunk, ChunkMeta
from ragtui.model.filters import SearchFilter
from ragtui.model.retrieval import CollectionMeta, Hit, KeywordMeta, Retrieval, RetrievalMeta
from ragtui.research.session import ResearchSession


def make_chunk(number: int, text: str, *, collection: str = "docs", page: str = "") -> Chunk:
    meta = ChunkMeta(collection=collection, source=f"file{number}.md", file_hash=f"h{number}", format="md",
                     chunk_index=0, char_start=0, char_end=len(text), page=page)
    return Chunk(id=f"chunk-{number}", text=text, meta=meta)


class StaticRetrieval:
    """An async retrieval callable returning the given texts as hits, best first; records its calls."""

    def __init__(self, texts: Sequence[str], meta: RetrievalMeta | None = None, notices: Sequence[str] = ()):
        self.texts = list(texts)
        self.meta = meta if meta is not None else \
            RetrievalMeta(collections={"docs": CollectionMeta(keyword=KeywordMeta(tier=1, kept=("pump",)))})
        self.notices = list(notices)
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.filters: list[SearchFilter | None] = []

    async def __call__(self, query: str, collections: Sequence[str], *,
                       search_filter: SearchFilter | None = None, strategies: bool = True) -> Retrieval:
        self.calls.append((query, tuple(collections)))
        self.filters.append(search_filter)
        n = len(self.texts)
        hits = [Hit(chunk=make_chunk(i, text, page=str(i)), score=1.0 - i / 100,
                    rel_score=1.0 - (i - 1) / max(n - 1, 1), legs=("vector", "keyword") if i % 2 else ("vector",))
                for i, text in enumerate(self.texts, start=1)]
        return Retrieval(query=query, hits=hits, meta=self.meta, notices=self.notices)


def new_session(settings: Settings, query: str, retrieve: StaticRetrieval,
                collections: Sequence[str] = ("docs",)) -> ResearchSession:
    """What Workspace.new_session builds, with `retrieve` as the retrieval stage."""
    return ResearchSession(settings, query, list(collections), history=HistoryStore(settings.data_dir),
                           retrieve=retrieve)


def reopen_session(settings: Settings, session_id: int) -> ResearchSession:
    """What Workspace.reopen builds; these sessions are not retrieved again."""
    return ResearchSession.reopen(settings, session_id, history=HistoryStore(settings.data_dir),
                                  retrieve=StaticRetrieval([]))
