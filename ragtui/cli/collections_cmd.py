"""`ragtui collections create|list|info|delete|reembed|remove|rebuild-keyword`: the collections and what is in
them."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from contextlib import aclosing
from dataclasses import asdict
from typing import TYPE_CHECKING

from ragtui.config import Settings
from ragtui.sanitize import one_line

if TYPE_CHECKING:
    from ragtui.workspace import Workspace


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("collections", help="create, list, inspect or delete collections")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="create an empty collection")
    create.add_argument("name")
    create.add_argument("--topic", default="")
    listing = actions.add_parser("list", help="collections with file and chunk counts, models and state")
    listing.add_argument("--json", action="store_true")
    info = actions.add_parser("info", help="formats, skipped files, chunk quality, entropy histogram and clusters")
    info.add_argument("name")
    info.add_argument("--json", action="store_true")
    delete = actions.add_parser("delete", help="delete a collection and its indexes")
    delete.add_argument("name")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    reembed = actions.add_parser("reembed", help="embed a collection's chunks again from its records, replacing "
                                                 "their vectors (e.g. vectors of the wrong dimension)")
    reembed.add_argument("name")
    reembed.add_argument("--model", action="append", default=[], metavar="MODEL",
                         help="only this embedding model's vectors (repeatable; default: the collection's and the "
                              "configured models)")
    remove = actions.add_parser("remove", help="drop files (or folders of them) from a collection's stores")
    remove.add_argument("name")
    remove.add_argument("paths", nargs="+", metavar="PATH",
                        help="a file or folder as the collection lists it, or a path on disk under a folder it was "
                             "ingested from")
    rebuild = actions.add_parser("rebuild-keyword", help="build the keyword index again from the collection's "
                                                         "records (queries keep the old one until it is done)")
    rebuild.add_argument("name")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.workspace import Workspace

    if args.action == "reembed":
        return asyncio.run(_reembed(settings, args.name, args.model))
    if args.action in ("remove", "rebuild-keyword"):
        return asyncio.run(_maintain(settings, args))
    with Workspace(settings) as workspace:
        if args.action == "create":
            workspace.create_collection(args.name, args.topic)
            print(f"created collection {args.name}")
            return 0
        if args.action == "list":
            return _list(workspace, args.json)
        if args.action == "info":
            return _info(workspace, args.name, args.json)
        return _delete(workspace, args.name, args.yes)


def _list(workspace: Workspace, as_json: bool) -> int:
    infos = workspace.list_collections()
    if as_json:
        print(json.dumps([asdict(i) for i in infos], indent=2))
        return 0
    if not infos:
        print("no collections yet; create one with `ragtui ingest PATH -c NAME`")
        return 0
    rows = [("NAME", "FILES", "CHUNKS", "STATE", "MODELS", "TOPIC")]
    rows += [(i.name, str(i.files), str(i.chunks), i.state, one_line(",".join(i.models)) or "-", one_line(i.topic))
             for i in infos]
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[5])
    for info in infos:
        if info.damaged:
            print(f"{info.name} is damaged: {one_line(info.damaged)}; remove it with "
                  f"`ragtui collections delete {info.name} --yes`, then ingest again")
    return 0


async def _reembed(settings: Settings, name: str, models: list[str]) -> int:
    from ragtui.cli.ingest_cmd import show_ingest
    from ragtui.workspace import Workspace

    async with Workspace(settings) as workspace, aclosing(workspace.reembed(name, models)) as events:
        return await show_ingest(events, sys.stdout)


async def _maintain(settings: Settings, args: argparse.Namespace) -> int:
    from ragtui.ingest.report import recheck_line, report_lines
    from ragtui.workspace import Workspace

    async with Workspace(settings) as workspace:
        if args.action == "rebuild-keyword":
            chunks = await workspace.rebuild_keyword(args.name)
            print(f"rebuilt the keyword index of {args.name} from its records: {chunks} chunks")
            return 0
        report = await workspace.remove_files(args.name, args.paths)
    for source in report.removed:
        print(f"removed {one_line(source)}")
    print(one_line(report_lines(report)[0]))
    if report.sessions_rechecked is not None:
        print(recheck_line(report.sessions_rechecked, report.citations_stale))
    for warning in report.warnings:
        print(f"warning: {one_line(warning)}", file=sys.stderr)
    return 0


def _delete_hint(name: str) -> str:
    return f"delete it with `ragtui collections delete {name} --yes`, then ingest again"


def _info(workspace: Workspace, name: str, as_json: bool) -> int:
    from ragtui.ingest.clusters import H_RANGE, entropy_clusters, entropy_histogram
    from ragtui.ingest.quality import quality
    from ragtui.library import CollectionDamaged

    settings = workspace.settings
    info = workspace.collection_info(name)
    try:
        coll = workspace.collection(name)
        damage = coll.damage()
    except CollectionDamaged as exc:
        damage = exc.damage
    if damage is not None and not damage.vectors_only:     # nothing more can be read: say what is wrong
        if as_json:
            print(json.dumps({"info": asdict(info)}, indent=2))
        else:
            print(one_line(f"{info.name}  (damaged)  {damage}"))
            print(_delete_hint(name))
        return 0
    records = coll.records
    skipped = [(f.source, f.reason) for f in records.files("skipped")]
    duplicates = [(f.source, f.reason) for f in records.files("duplicate")]
    stats = records.chunk_stats()
    hist = entropy_histogram([h for h, _ in stats])
    clusters = entropy_clusters(stats, settings.ingest.entropy_min, settings.ingest.entropy_max)
    formats = records.format_counts()
    pending = {m: records.pending_count(m) for m in settings.embed.all_models}
    report = quality(records.chunk_edges(), records.filter_counts())
    if as_json:
        print(json.dumps({"info": asdict(info), "formats": formats, "skipped": skipped, "duplicates": duplicates,
                          "histogram": hist, "clusters": [asdict(c) for c in clusters],
                          "pending_embeddings": pending, "quality": report.to_json()}, indent=2))
        return 0
    print(one_line(f"{info.name}  ({info.state})  topic: {info.topic or '-'}  created {info.created}"))
    print(one_line(f"files {info.files}, chunks {info.chunks}, models {', '.join(info.models) or '-'}"))
    if info.damaged:
        print(one_line(f"damaged: {info.damaged}; searched with keyword matches only"))
        print(_delete_hint(name))
    for model, n in pending.items():
        if n:
            print(f"  {n} chunks still need {model} embeddings")
    print("formats: " + one_line(", ".join(f"{k} {v}" for k, v in formats.items()) or "-"))
    if skipped:
        print(f"skipped ({len(skipped)}):")
        for source, reason in skipped:
            print(f"  {one_line(source)}: {one_line(reason)}")
    for source, reason in duplicates:
        print(f"duplicate: {one_line(source)} ({one_line(reason)})")
    for line in report.lines():
        print(one_line(line))
    if stats:
        width = (H_RANGE[1] - H_RANGE[0]) / len(hist)
        top = max(hist)
        print("entropy histogram (bits/byte):")
        for i, n in enumerate(hist):
            if n:
                lo = H_RANGE[0] + i * width
                print(f"  {lo:4.1f}-{lo + width:4.1f}  {'#' * max(1, 40 * n // top):40}  {n}")
        print("clusters (RAGWeed 2g):")
        for c in clusters:
            flag = "  (excluded)" if c.excluded else ""
            print(f"  {c.label:17} {c.size:7} chunks  H {c.h_mean:.2f}±{c.h_std:.2f}  "
                  f"words {c.word_mean:.0f}{flag}")
    return 0


def _delete(workspace: Workspace, name: str, yes: bool) -> int:
    from ragtui.errors import RagtuiError

    info = workspace.collection_info(name)
    if not yes:
        if not sys.stdin.isatty():
            raise RagtuiError(f"refusing to delete {name!r} without confirmation; pass --yes", exit_code=2)
        answer = input(f"Delete collection {name!r} ({info.files} files, {info.chunks} chunks)? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not deleted")
            return 1
    workspace.delete_collection(name)
    print(f"deleted collection {name}")
    return 0
