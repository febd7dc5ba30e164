"""`ragtui mcp`'s server: the tools of `tools.py` and the collections as MCP tools and resources, over stdio.

Built on the official MCP Python SDK's `MCPServer`. Standard output is the
protocol channel: the SDK's stdio transport serves the protocol from a private
copy of file descriptor 1 and points descriptor 1 itself at standard error, so
a stray print from any library cannot corrupt a message; logging goes to
standard error. A line that is not a JSON-RPC message gets its JSON-RPC error
(`protocol_errors.py`), and a client that hangs up mid-call ends the server
quietly. A `RagtuiError` in a tool becomes the tool's one error line
(`ToolError`); anything else is the SDK's generic "Error executing tool",
with the traceback on standard error.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, ParamSpec, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from ragtui import __version__
from ragtui.errors import RagtuiError, describe
from ragtui.mcp_server.protocol_errors import Answering
from ragtui.mcp_server.tools import MAX_CONTEXT_CHARS, MAX_QUERY_CHARS, MAX_QUOTE_CHARS, MAX_RESULTS, Tools
from ragtui.model.filters import MAX_VALUES as MAX_FILTERS
from ragtui.sanitize import one_line

P = ParamSpec("P")
R = TypeVar("R")

INSTRUCTIONS = (
    "ragtui searches the user's own document collections (hybrid keyword + vector retrieval). Use `search` to "
    "find passages, `read` to see a passage in its document, `ask` for a cited answer (slow: it runs the "
    "user's LLM over every source), `research` for a question of several parts (slower: a plan of "
    "sub-questions, evidence for each, one cited report), and `verify_quote` before you attribute a quotation "
    "to a source. "
    "Collections are listed as resources (ragtui://collections)."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)

Collections = Annotated[list[str] | None, Field(description="collection names to search (default: all)")]
Filter = Annotated[list[str] | None, Field(description=f"search only within these (at most {MAX_FILTERS}, as "
                                                     "ragtui's -f): path:GLOB on the file path (path:docs/*.pdf, "
                                                     "path:report.pdf, path:docs/), heading:WORDS in the section "
                                                     "heading; values of one kind widen, different kinds narrow")]
ChunkId = Annotated[str, Field(description="a chunk id from search or ask results")]


def one_error_line(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """A RagtuiError raised by the tool reaches the client as its one line (the CLI's `ragtui: ...` line)."""
    @functools.wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except RagtuiError as exc:
            raise ToolError(one_line(describe(exc))) from None
    return call


def in_thread(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """A blocking engine call (SQLite, the stores) run in a worker thread, so the protocol keeps answering."""
    import anyio.to_thread

    @functools.wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
    return call


def build(tools: Tools) -> MCPServer:
    """The server with its tools (and `ingest` only when the tools allow it) and resources."""
    server: MCPServer = MCPServer("ragtui", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(annotations=READ_ONLY)
    @one_error_line
    async def search(query: Annotated[str, Field(description=f"the question or keywords (at most "
                                                            f"{MAX_QUERY_CHARS} characters)")],
                     collections: Collections = None,
                     limit: Annotated[int, Field(description=f"sources to return, 1 to {MAX_RESULTS}")] = 10,
                     filter: Filter = None) -> dict[str, Any]:
        """Hybrid retrieval (keywords with synonyms + embeddings) over the user's collections: the best
        chunks, each with its collection, source file, page, heading, text, score and the legs that found it."""
        return await tools.search(query, collections, limit, filter)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    @one_error_line
    async def ask(question: Annotated[str, Field(description=f"the question (at most {MAX_QUERY_CHARS} "
                                                             "characters)")],
                  collections: Collections = None, filter: Filter = None) -> dict[str, Any]:
        """A full research session (saved to the user's ragtui history): retrieve sources, have the LLM
        annotate each, then answer with [N] citations. Returns the answer, each numbered source with its
        annotation and relevance, and every quotation the answer attributes to a source, checked against that
        source's text (verified true or false). Slow: minutes on a local model."""
        return await tools.ask(question, collections, filter)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False))
    @one_error_line
    async def research(question: Annotated[str, Field(description=f"the question, perhaps of several parts (at "
                                                                  f"most {MAX_QUERY_CHARS} characters)")],
                       collections: Collections = None, filter: Filter = None,
                       max_rounds: Annotated[int | None, Field(description="rounds of new searches after the first "
                                                                           "(0-10; default: the user's "
                                                                           "research.max_rounds)")] = None,
                       ) -> dict[str, Any]:
        """A research run (saved to the user's ragtui history): the LLM splits the question into sub-questions,
        each is searched and its sources annotated, gaps are searched again, then one report cites every kept
        source [N]. Returns the report with its checked quotes, the plan with each sub-question's kept sources,
        every source, the limits reached and the cost. Bounded by the user's [research] limits (model calls,
        tokens, seconds). Slow: many minutes on a local model."""
        return await tools.research(question, collections, filter, max_rounds)

    @server.tool(annotations=READ_ONLY)
    @one_error_line
    @in_thread
    def read(collection: Annotated[str, Field(description="the chunk's collection (with chunk_id)")] = "",
             chunk_id: ChunkId = "",
             session: Annotated[int, Field(description="a session id from ask (with number)")] = 0,
             number: Annotated[int, Field(description="a source's citation number [N] in that session")] = 0,
             context_chars: Annotated[int, Field(description=f"characters of the document on each side, 0 to "
                                                             f"{MAX_CONTEXT_CHARS}")] = 2000) -> dict[str, Any]:
        """A source's text in its document: the chunk and the text around it. Name it by collection and
        chunk_id (from search or ask), or by session and citation number."""
        return tools.read(collection, chunk_id, session, number, context_chars)

    @server.tool(annotations=READ_ONLY)
    @one_error_line
    @in_thread
    def verify_quote(quote: Annotated[str, Field(description=f"the quotation (at most {MAX_QUOTE_CHARS} "
                                                             "characters; ... marks a gap)")],
                     collection: Annotated[str, Field(description="the collection of the chunk or document")] = "",
                     chunk_id: Annotated[str, Field(description="check one chunk (from search or ask)")] = "",
                     source: Annotated[str, Field(description="or check a whole document: its source path as "
                                                              "search gives it")] = "",
                     session: Annotated[int, Field(description="or check every source of a saved session (from "
                                                               "ask)")] = 0,
                     number: Annotated[int, Field(description="with session: the source [number] the quote is "
                                                              "attributed to")] = 0) -> dict[str, Any]:
        """Whether a quotation appears word for word in a source (case, punctuation and line breaks aside). Use
        it before attributing a quote: found is false when the source does not say it. Given a session (and the
        number of the source it is attributed to), found_in lists the session's sources that hold it, and the
        verdict says "misattributed to [N], found in [M]" when another of them does."""
        return tools.verify_quote(quote, collection, chunk_id, source, session, number)

    if tools.allow_ingest:
        @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                                 open_world_hint=False))
        @one_error_line
        async def ingest(path: Annotated[str, Field(description="a file or folder on the user's machine")],
                         collection: Annotated[str, Field(description="the collection (created when new)")],
                         ) -> dict[str, Any]:
            """Ingest a file or folder into a collection, as `ragtui ingest PATH -c NAME`."""
            return await tools.ingest(path, collection)

    @server.resource("ragtui://collections", name="collections", mime_type="application/json",
                     description="every collection: name, topic, state, files, chunks, embedding models")
    @in_thread
    def collections() -> list[dict[str, Any]]:
        return tools.collections()

    @server.resource("ragtui://collections/{name}", name="collection", mime_type="application/json",
                     description="one collection's summary")
    @in_thread
    def collection(name: str) -> dict[str, Any]:
        for info in tools.collections():
            if info["name"] == name:
                return info
        raise ResourceNotFoundError(f"no collection {one_line(name)!r}")

    return server


async def serve(tools: Tools) -> None:
    """Answer MCP requests on standard input and output until the client closes them.

    As `MCPServer.run_stdio_async`, with each line that is not a JSON-RPC message answered with its error
    (`protocol_errors`); a client that closes its end while a reply is being written ends the server quietly.
    """
    from mcp.server.stdio import stdio_server

    lowlevel = build(tools)._lowlevel_server
    try:
        async with stdio_server() as (read_stream, write_stream):
            await lowlevel.run(Answering(read_stream, write_stream), write_stream,
                               lowlevel.create_initialization_options())
    except* (BrokenPipeError, ConnectionResetError):
        pass        # nobody is left to answer
