"""`ragtui mcp`: a Model Context Protocol server on standard input and output, for agents and MCP clients.

Tools: search, ask, read, verify_quote (and ingest, only with --allow-ingest);
the collections as resources. It reads what the CLI reads and obeys the same
settings and limits; nothing deletes through it. Standard output carries the
protocol alone: every notice goes to standard error.
"""

from __future__ import annotations

import argparse

from ragtui.config import Settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("mcp", help="serve your collections to MCP clients and agents over stdio",
                            description="Speak the Model Context Protocol on standard input and output: tools "
                                        "search, ask, read and verify_quote, and the collections as resources. "
                                        "Read-only unless --allow-ingest is given. Started by an MCP client "
                                        "(e.g. `claude mcp add ragtui -- ragtui mcp`), not by hand.")
    parser.add_argument("--allow-ingest", action="store_true",
                        help="add an `ingest` tool that adds files to a collection (off by default: read-only)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    import anyio

    from ragtui.mcp_server.server import serve
    from ragtui.mcp_server.tools import Tools
    from ragtui.workspace import Workspace

    async def main() -> None:
        async with Workspace(settings) as workspace:
            # A search names no collection by default, so it reads them all: their stores (Chroma's HNSW index
            # above all, seconds at a million chunks) start loading now, while the client starts up and before
            # its first search, which otherwise waited for them.
            if names := workspace.collection_names():
                workspace.prepare_soon(names)
            await serve(Tools(workspace, allow_ingest=args.allow_ingest))

    anyio.run(main)
    return 0
