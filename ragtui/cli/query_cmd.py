"""`ragtui query "..."`: the ranked sources hybrid retrieval returns, as a table or JSON (spec §10)."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from ragtui.config import Settings
from ragtui.retrieve.result import MODES, Retrieval


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("query", help="retrieve ranked sources for a question (no LLM)")
    parser.add_argument("text", help="the question or keywords")
    parser.add_argument("-c", "--collection", action="append", default=[], metavar="NAME",
                        help="collection to search (repeatable; default: all)")
    parser.add_argument("--mode", choices=MODES, default="hybrid", help="which legs run (default: hybrid)")
    parser.add_argument("--no-synonyms", action="store_true", help="no WordNet expansion for this query")
    parser.add_argument("--json", action="store_true", help="hits and retrieval_meta as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.errors import RagtuiError
    from ragtui.workspace import Workspace

    with Workspace(settings) as workspace:
        names = args.collection or workspace.collection_names()
        if not names:
            raise RagtuiError("no collections yet; create one with `ragtui ingest PATH -c NAME`")
        result = asyncio.run(workspace.retrieve(args.text, names, mode=args.mode,
                                                synonyms=False if args.no_synonyms else None))
    if args.json:
        print(json.dumps(as_json(result), indent=2, default=str))
    else:
        print_table(result)
    return 0


def as_json(result: Retrieval) -> dict[str, Any]:
    return {
        "query": result.query,
        "keyword_only": result.keyword_only,
        "notices": result.notices,
        "nodes": [{"rank": i, "id": h.chunk.id, "score": h.score, "rel_score": h.rel_score, "legs": list(h.legs),
                   "collection": h.chunk.meta.collection, "source": h.chunk.meta.source, "page": h.chunk.meta.page,
                   "label": h.chunk.label, "text": h.chunk.text}
                  for i, h in enumerate(result.hits, 1)],
        "retrieval_meta": result.meta.to_json(),
    }


def _first_line(text: str, width: int = 60) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[:width - 1] + "…"


def print_table(result: Retrieval) -> None:
    for notice in result.notices:
        print(f"note: {notice}")
    rows = [("#", "score", "rel", "collection", "file", "page", "legs", "first line")]
    for i, h in enumerate(result.hits, 1):
        rows.append((str(i), f"{h.score:.3f}", f"{h.rel_score:.2f}", h.chunk.meta.collection, h.chunk.meta.source,
                     h.chunk.meta.page, "+".join(h.legs), _first_line(h.chunk.text)))
    if len(rows) > 1:
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]) - 1)]
        for r in rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)) + "  " + r[-1])
    for name, meta in result.meta.collections.items():
        kw = meta.keyword
        words = f"kept {' '.join(kw.kept)}" + (f", dropped {' '.join(kw.dropped)}" if kw.dropped else "")
        syn = "; synonyms " + ", ".join(f"{w}: {'/'.join(s)}" for w, s in kw.synonyms.items()) if kw.synonyms else ""
        hits = meta.hits
        print(f"[{name}] keyword tier {kw.tier} ({words}{syn}); hits vector {hits.vector}, "
              f"keyword {hits.keyword}, both {hits.both}")
    print(f"timings (ms): embed {dict(result.meta.embed_ms)}, legs+merge {result.meta.legs_and_merge_ms}, "
          f"postprocess {result.meta.postprocess_ms}")
