"""What `ragtui mcp` offers an agent, as plain functions over one Workspace, returning JSON-ready dicts.

Every argument an agent sends is untrusted and bounded here, before anything
runs: a query or quote past its limit, an unknown collection, a chunk id the
collection does not hold, each is refused with one line (`ToolRefused`). Text
that leaves (document text, answers, annotations) is made inert with
`sanitize.clean`, names with `one_line`: an agent's client may show it in a
terminal. The server module only maps these onto MCP tools and resources.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtui.config import Settings
from ragtui.errors import RagtuiError
from ragtui.model.filters import parse_filters
from ragtui.quotes import occurs
from ragtui.sanitize import clean, one_line

if TYPE_CHECKING:
    from ragtui.events import Event
    from ragtui.model.chunks import Chunk
    from ragtui.workspace import Workspace

MAX_QUERY_CHARS = 2_000         # a question or keywords; a longer one is a paste, not a query
MAX_QUOTE_CHARS = 4_000         # a quote to check
MAX_NAME_CHARS = 200            # a collection name, a chunk id
MAX_RESULTS = 50                # sources `search` returns at most
MAX_CONTEXT_CHARS = 8_000       # text `read` returns on each side of a chunk at most
MAX_COLLECTIONS = 32            # collections one call may name


class ToolRefused(RagtuiError):
    """An argument the server will not act on: too long, out of range, naming nothing that exists."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


def bounded(name: str, value: str, limit: int) -> str:
    """`value` when it has some text and at most `limit` characters; one refusal line otherwise."""
    if len(value) > limit:
        raise ToolRefused(f"{name} is {len(value):,} characters; the most this server takes is {limit:,}")
    if not value.strip():
        raise ToolRefused(f"{name} is empty")
    return value


def in_range(name: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise ToolRefused(f"{name} must be from {low} to {high}, not {value}")
    return value


class Tools:
    """The tools over one open Workspace; `allow_ingest` adds `ingest` (off unless `--allow-ingest`)."""

    def __init__(self, workspace: Workspace, *, allow_ingest: bool = False) -> None:
        self.workspace = workspace
        self.allow_ingest = allow_ingest

    @property
    def settings(self) -> Settings:
        return self.workspace.settings

    def _collections(self, names: Sequence[str] | None) -> list[str]:
        """The named collections (each must exist), or every collection when none is named."""
        from ragtui.library import validate_collection_name

        known = self.workspace.collection_names()
        if not names:
            if not known:
                raise ToolRefused("no collections yet: the user creates one with `ragtui ingest PATH -c NAME`")
            return known
        if len(names) > MAX_COLLECTIONS:
            raise ToolRefused(f"{len(names)} collections named; the most is {MAX_COLLECTIONS}")
        for name in names:
            validate_collection_name(bounded("collection", name, MAX_NAME_CHARS))
            if name not in known:
                raise ToolRefused(f"no collection {name!r}; there are: {', '.join(known) or 'none'}")
        return list(dict.fromkeys(names))

    # --- collections ---------------------------------------------------------------------

    def collections(self) -> list[dict[str, Any]]:
        """Every collection's summary (a damaged one says so)."""
        return [{"name": one_line(c.name), "topic": one_line(c.topic), "state": c.state, "files": c.files,
                 "chunks": c.chunks, "embedding_models": list(c.models), "created": c.created,
                 **({"damaged": one_line(c.damaged)} if c.damaged else {})}
                for c in self.workspace.list_collections()]

    # --- search ------------------------------------------------------------------------------

    async def search(self, query: str, collections: Sequence[str] | None = None, limit: int = 10,
                     filters: Sequence[str] | None = None) -> dict[str, Any]:
        """Hybrid retrieval, as `ragtui query`: ranked chunks with their pages, scores and legs, within the
        filter (`path:GLOB`, `heading:WORDS`, as `-f`) when one is given."""
        bounded("query", query, MAX_QUERY_CHARS)
        in_range("limit", limit, 1, MAX_RESULTS)
        search_filter = parse_filters(filters or ())
        names = self._collections(collections)
        result = await self.workspace.retrieve(query.strip(), names, search_filter=search_filter)
        return {
            "query": clean(result.query), "filter": [one_line(c) for c in search_filter.chips()],
            "keyword_only": result.keyword_only,
            "notices": [one_line(n) for n in result.notices], "total": len(result.hits),
            "results": [{"rank": i, **_chunk_json(h.chunk), "score": round(h.score, 6),
                         "rel_score": round(h.rel_score, 4), "legs": list(h.legs),
                         **({"neighbor_of": h.neighbor_of} if h.neighbor_of else {})}
                        for i, h in enumerate(result.hits[:limit], 1)],
        }

    # --- ask --------------------------------------------------------------------------------

    async def ask(self, question: str, collections: Sequence[str] | None = None,
                  filters: Sequence[str] | None = None) -> dict[str, Any]:
        """A full research session, as `ragtui ask` (saved to the history): retrieve, annotate, answer; the
        answer with its citations, each source's annotation, every quote the answer attributes, checked, and
        the numbers it states that its cited sources do not hold. A stage that failed is listed under
        "failures"; when no answer came at all, the failure is the error."""
        from ragtui.research.session import preflight

        bounded("question", question, MAX_QUERY_CHARS)
        search_filter = parse_filters(filters or ())
        preflight(self.settings, set_model="set [llm] model in the config `ragtui mcp` reads, or start it with "
                                           "--set llm.model=NAME")
        names = self._collections(collections)
        session = self.workspace.new_session(question.strip(), names, search_filter=search_filter)
        try:
            notices, failures = await _said(session.run())
        finally:
            await session.aclose()
        turn = session.turn
        if failures and not turn.answer:
            raise RagtuiError("; ".join(failures) + (f" (session {session.id} is saved)" if session.id else ""))
        checks = session.quote_checks(turn)
        return {
            "session": session.id, "question": clean(turn.query),
            "filter": [one_line(c) for c in search_filter.chips()], "answer": clean(turn.answer),
            "stop_reason": turn.stop_reason.value, "citations": list(turn.citations),
            "unknown_citations": list(turn.unknown_citations),
            "quotes": [{**check.to_json(), "quote": clean(check.quote)} for check in checks],
            "numbers": [{**check.to_json(), "stated": clean(check.stated), "sentence": clean(check.sentence),
                         "near": clean(check.near), "verdict": clean(check.verdict)}
                        for check in session.number_checks(turn)],
            "sources": [s.to_json() for s in turn.sources],
            "notices": notices, "failures": failures,
        }

    # --- research ----------------------------------------------------------------------------

    async def research(self, question: str, collections: Sequence[str] | None = None,
                       filters: Sequence[str] | None = None, max_rounds: int | None = None) -> dict[str, Any]:
        """A research run, as `ragtui research` (saved to the history), within the user's [research] limits:
        the run's JSON (`research.run_json`) with its notices, its limits reached and the stages that failed
        under "failures"; when no report came at all, the failure is the error."""
        from ragtui.research.run_json import run_json
        from ragtui.research.session import preflight

        bounded("question", question, MAX_QUERY_CHARS)
        if max_rounds is not None:
            in_range("max_rounds", max_rounds, 0, 10)
        search_filter = parse_filters(filters or ())
        preflight(self.settings, set_model="set [llm] model in the config `ragtui mcp` reads, or start it with "
                                           "--set llm.model=NAME")
        names = self._collections(collections)
        runner = self.workspace.research(" ".join(question.split()), names, search_filter=search_filter,
                                         max_rounds=max_rounds)
        try:
            notices, failures = await _said(runner.run())
        finally:
            await runner.session.aclose()
        session = runner.session
        if failures and not (session.conversation.is_report and session.turn.answer):
            raise RagtuiError("; ".join(failures) + (f" (session {session.id} is saved)" if session.id else ""))
        return {**run_json(session), "notices": list(dict.fromkeys(notices)), "failures": failures}

    # --- read ---------------------------------------------------------------------------------

    def _chunk(self, collection: str, chunk_id: str) -> Chunk:
        self._collections([collection])
        bounded("chunk_id", chunk_id, MAX_NAME_CHARS)
        chunk = self.workspace.chunk(collection, chunk_id)
        if chunk is None:
            raise ToolRefused(f"collection {collection!r} holds no chunk {chunk_id!r} (ids come from search or "
                              "ask results)")
        return chunk

    def _cited(self, session_id: int, number: int) -> Chunk:
        from ragtui.history import RECORD_ID_MAX

        in_range("session", session_id, 1, RECORD_ID_MAX)
        in_range("number", number, 1, RECORD_ID_MAX)
        conversation = self.workspace.history.load(session_id)
        try:
            return conversation.source(number).chunk
        except KeyError:
            raise ToolRefused(f"session {session_id} has no source [{number}]") from None

    def read(self, collection: str = "", chunk_id: str = "", session: int = 0, number: int = 0,
             context_chars: int = 2_000) -> dict[str, Any]:
        """A chunk and up to `context_chars` of its document's text on each side: named by collection and
        chunk id (from search or ask), or by a saved session's citation [number]."""
        in_range("context_chars", context_chars, 0, MAX_CONTEXT_CHARS)
        by_id, by_citation = bool(collection or chunk_id), bool(session or number)
        if by_id == by_citation:
            raise ToolRefused("name the chunk either by collection and chunk_id, or by session and number")
        chunk = self._chunk(collection, chunk_id) if by_id else self._cited(session, number)
        view = self.workspace.document_of(chunk)
        begin = max(0, view.start - context_chars)
        end = min(len(view.text), view.end + context_chars)
        return {**_chunk_json(chunk), "before": clean(view.text[begin:view.start]),
                "after": clean(view.text[view.end:end]), "document_chars": len(view.text),
                "shown": [begin, end], **({"note": one_line(view.note)} if view.note else {})}

    # --- verify_quote -----------------------------------------------------------------------

    def verify_quote(self, quote: str, collection: str = "", chunk_id: str = "", source: str = "", session: int = 0,
                     number: int = 0) -> dict[str, Any]:
        """Whether `quote` appears, word for word (case, punctuation and line breaks aside; "..." for a gap), in
        one chunk (`chunk_id`), in a whole indexed document (`source`, its path as search results give it), or
        in the sources of a saved session (`session`; with `number`, as attributed to its source [number]);
        for a document, the chunks that hold it and their pages; for a session, the sources that hold it and
        the verdict (`quotes.QuoteCheck`: verified, misattributed to [N] and found in [M], or not found)."""
        bounded("quote", quote, MAX_QUOTE_CHARS)
        if sum(map(bool, (chunk_id, source, session))) != 1:
            raise ToolRefused("give chunk_id (one chunk), source (a whole document) or session (its sources), "
                              "one of them")
        if session:
            return self._verify_in_session(quote, session, number)
        if not collection:
            raise ToolRefused("name the collection that holds the chunk or the document")
        if chunk_id:
            chunk = self._chunk(collection, chunk_id)
            return {"found": occurs(quote, chunk.text), "checked": "chunk", **_chunk_json(chunk, text=False)}
        self._collections([collection])
        bounded("source", source, 4 * MAX_NAME_CHARS)
        store = self.workspace.collection(collection)
        document = store.document(source)
        if document is None:
            raise ToolRefused(f"collection {collection!r} has no indexed document {source!r}")
        found = occurs(quote, document[0])
        holding = [c for c in store.records.chunks_of([source]) if occurs(quote, c.text)] if found else []
        return {"found": found, "checked": "document", "collection": one_line(collection),
                "source": one_line(source),
                "in_chunks": [{"chunk_id": c.id, "page": one_line(c.meta.page)} for c in holding]}

    def _verify_in_session(self, quote: str, session_id: int, number: int) -> dict[str, Any]:
        from ragtui.history import RECORD_ID_MAX
        from ragtui.quotes import check_quote

        in_range("session", session_id, 1, RECORD_ID_MAX)
        conversation = self.workspace.history.load(session_id)
        texts = {s.number: s.chunk.text for s in conversation.all_sources}
        if number and number not in texts:
            raise ToolRefused(f"session {session_id} has no source [{number}]")
        check = check_quote(quote, (number,) if number else (), texts)
        found = check.verified if number else bool(check.found_in)
        return {"found": found, "checked": "session", "session": session_id, "cited": list(check.cited),
                "found_in": list(check.found_in),
                **({"state": check.state, "verdict": check.verdict} if number else {})}

    # --- ingest (only with --allow-ingest) -------------------------------------------------------

    async def ingest(self, path: str, collection: str) -> dict[str, Any]:
        """Ingest a file or folder into a collection (created when new), as `ragtui ingest`."""
        from ragtui import events as ev
        from ragtui.ingest.report import report_lines
        from ragtui.library import validate_collection_name
        from ragtui.paths import user_path

        if not self.allow_ingest:
            raise ToolRefused("this server is read-only: start it with `ragtui mcp --allow-ingest` to ingest")
        validate_collection_name(bounded("collection", collection, MAX_NAME_CHARS))
        target: Path = user_path(bounded("path", path, 4 * MAX_NAME_CHARS))
        if not target.exists():
            raise ToolRefused(f"no such file or folder: {path}")
        report: list[str] = []
        skipped: list[str] = []
        async with aclosing(self.workspace.ingest([target], collection)) as events:
            async for event in events:
                if isinstance(event, ev.FileSkipped):
                    skipped.append(one_line(f"{event.source}: {event.reason}"))
                elif isinstance(event, ev.IngestFinished):
                    report = [one_line(line) for line in report_lines(event.report)]
        return {"collection": one_line(collection), "report": report, "skipped": skipped}


def _chunk_json(chunk: Chunk, *, text: bool = True) -> dict[str, Any]:
    meta = chunk.meta
    out: dict[str, Any] = {"collection": one_line(meta.collection), "chunk_id": chunk.id,
                           "source": one_line(meta.source), "page": one_line(meta.page),
                           "heading": one_line(meta.heading), "label": one_line(chunk.label)}
    if text:
        out["text"] = clean(chunk.text)
    return out


async def _said(run: AsyncGenerator[Event, None]) -> tuple[list[str], list[str]]:
    """What an ask's or a research run's events said, run to their end: its notices (a limit reached and a
    session not saved among them) and the stages that failed, each one line."""
    from ragtui import events as ev

    notices: list[str] = []
    failures: list[str] = []
    async with aclosing(run) as events:
        async for event in events:
            if isinstance(event, ev.Notice):
                notices.append(one_line(f"{event.level}: {event.message}"))
            elif isinstance(event, ev.LimitReached):
                notices.append(one_line(f"warning: {event.message}"))
            elif isinstance(event, ev.StageFailed):
                failures.append(one_line(f"{event.stage} failed: {event.message}"))
            elif isinstance(event, ev.SessionSaved) and event.not_saved:
                notices.append(one_line(f"warning: this session is not saved: {event.not_saved}"))
    return notices, failures
