"""`ragtui query "..."`: the ranked sources hybrid retrieval returns, as a table or JSON.

`--queries FILE` runs one query per line in one process, collections opened
once: for scripts, and to measure warm latency from outside (retrieval_meta
carries the timings).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from ragtui.cli.arg_types import add_filter_argument, positive
from ragtui.config import Settings
from ragtui.model.retrieval import MODES, Retrieval
from ragtui.sanitize import clean, one_line


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("query", help="retrieve ranked sources for a question (no LLM)")
    parser.add_argument("text", nargs="?", help="the question or keywords")
    parser.add_argument("--queries", type=Path, metavar="FILE",
                        help="run every non-blank line of FILE as a query ('-': standard input); "
                             "with --json, one JSON object per line")
    parser.add_argument("-c", "--collection", action="append", default=[], metavar="NAME",
                        help="collection to search (repeatable; default: all)")
    parser.add_argument("--mode", choices=MODES, default="hybrid", help="which legs run (default: hybrid)")
    add_filter_argument(parser)
    parser.add_argument("--no-synonyms", action="store_true", help="no WordNet expansion for this query")
    parser.add_argument("--json", action="store_true", help="hits and retrieval_meta as JSON")
    parser.add_argument("--limit", type=positive, metavar="N", help="print at most N sources (default: all)")
    parser.add_argument("--why", metavar="PATH[:PAGE]",
                        help="for a file you expected among the sources (its path as listed, or any path ending "
                             "with it; :PAGE for one page): what happened to it in each leg and step")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.errors import RagtuiError
    from ragtui.model.filters import parse_filters
    from ragtui.retrieve.explain import why_lines
    from ragtui.workspace import Workspace

    if (args.text is None) == (args.queries is None):
        raise RagtuiError("give a query or --queries FILE (not both)", exit_code=2)
    if args.text is not None and not args.text.strip():
        raise RagtuiError("query needs some text to search for", exit_code=2)
    if args.why is not None and args.queries is not None:
        raise RagtuiError("--why goes with one query, not --queries", exit_code=2)
    if args.why is not None and args.filter:
        raise RagtuiError("--why replays the search without filters: leave out -f/--filter", exit_code=2)
    queries = [args.text] if args.queries is None else read_queries(args.queries)
    synonyms = False if args.no_synonyms else None
    search_filter = parse_filters(args.filter)
    with Workspace(settings) as workspace:
        names = args.collection or workspace.collection_names()
        if not names:
            raise RagtuiError("no collections yet; create one with `ragtui ingest PATH -c NAME`")
        workspace.prepare_soon(names, args.mode)   # its loads overlap the engine's imports

        async def run_all() -> None:
            for query in queries:
                result = await workspace.retrieve(query, names, mode=args.mode, synonyms=synonyms,
                                                  search_filter=search_filter)
                why = [] if args.why is None else \
                    await workspace.why_not(query, names, args.why, mode=args.mode, synonyms=synonyms)
                if args.json:
                    indent = 2 if args.queries is None else None
                    shown = as_json(result, args.limit)
                    if args.why is not None:
                        shown["why"] = [why_lines(w) for w in why]
                    print(json.dumps(shown, indent=indent, default=str), flush=True)
                else:
                    if args.queries is not None:
                        print(f"== {query}")
                    print_table(result, args.limit)
                    for w in why:
                        print()
                        for line in why_lines(w):
                            print(one_line(line))

        asyncio.run(run_all())
    return 0


def read_queries(path: Path) -> list[str]:
    """The non-blank lines of the file (or standard input for '-'), stripped."""
    from ragtui.errors import RagtuiError

    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:        # ValueError: not UTF-8, or a name no file can have
        raise RagtuiError(f"cannot read queries from {path}: {exc}", exit_code=2) from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def as_json(result: Retrieval, limit: int | None = None) -> dict[str, Any]:
    return {
        "query": result.query,
        "keyword_only": result.keyword_only,
        "vectors_unreachable": result.vectors_unreachable or None,
        "notices": result.notices,
        "nodes": [{"rank": i, "id": h.chunk.id, "score": h.score, "rel_score": h.rel_score, "legs": list(h.legs),
                   "collection": h.chunk.meta.collection, "source": h.chunk.meta.source, "page": h.chunk.meta.page,
                   "page_last": h.chunk.meta.last_page,
                   "label": h.chunk.label, "text": h.chunk.text,
                   "evidence": [{"leg": e.leg, "rank": e.rank, "score": e.score} for e in h.evidence],
                   "neighbor_of": h.neighbor_of, "distance": h.distance}
                  for i, h in enumerate(result.hits[:limit], 1)],
        "hits_total": len(result.hits),
        "retrieval_meta": result.meta.to_json(),
    }


def _first_line(text: str, width: int = 60) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[:width - 1] + "…"


def print_table(result: Retrieval, limit: int | None = None) -> None:
    """The hits with why each was found (rank and score per leg), then how each collection was searched:
    the same formatter (ragtui.retrieve.explain) as the TUI's details view."""
    from ragtui.retrieve.explain import evidence_line, meta_lines

    for notice in result.notices:
        print(f"note: {one_line(notice)}")
    rows = [("#", "score", "rel", "collection", "file", "page", "legs", "why (rank and score per leg)",
             "first line")]
    for i, h in enumerate(result.hits[:limit], 1):
        legs = "+".join(h.legs) or f"neighbour (d={h.distance})"
        rows.append((str(i), f"{h.score:.3f}", f"{h.rel_score:.2f}", h.chunk.meta.collection,
                     one_line(h.chunk.meta.source), one_line(h.chunk.meta.pages), legs, evidence_line(h.evidence),
                     one_line(_first_line(clean(h.chunk.text)))))
    if len(rows) > 1:
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]) - 1)]
        for r in rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)) + "  " + r[-1])
    if limit is not None and len(result.hits) > limit:
        print(f"({len(result.hits) - limit} more not shown: --limit {limit})")
    for line in meta_lines(result.meta):
        print(one_line(line))
    print(f"timings (ms): embed {dict(result.meta.embed_ms)}, legs+merge {result.meta.legs_and_merge_ms}, "
          f"postprocess {result.meta.postprocess_ms}")
