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
    from ragtui.ingest.profile import CollectionProfile
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
    info.add_argument("--plot", action="store_true",
                      help="draw the entropy histogram as bars (plain characters, without colour, when the output "
                           "is not a terminal or NO_COLOR is set)")
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
            return _info(workspace, args)
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
    rows += [(i.name, str(i.files), str(i.chunks), i.state + (", watched" if i.watched else ""),
              one_line(",".join(i.models)) or "-", one_line(i.topic)) for i in infos]
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


def _info(workspace: Workspace, args: argparse.Namespace) -> int:
    from ragtui.ingest.profile import cluster_lines, histogram_lines, profile_lines

    if args.plot and args.json:
        from ragtui.errors import RagtuiError

        raise RagtuiError("--plot draws for a reader; --json is for a program: pass one of them", exit_code=2)
    report = workspace.collection_profile(args.name)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
        return 0
    for line in profile_lines(report):
        print(line)
    if sum(report.histogram):
        print("\n".join(_histogram_plot(report) if args.plot else histogram_lines(report.histogram)))
        print("\n".join(cluster_lines(report.clusters)))
    return 0


def _histogram_plot(report: CollectionProfile) -> list[str]:
    """The histogram drawn as bars (`plots.for_stream`: the terminal's width, colour only on a terminal without
    NO_COLOR); its table where the terminal is too narrow for the axes."""
    from ragtui import plots
    from ragtui.ingest.profile import histogram_lines, histogram_title

    plot = plots.for_stream(lambda plt: plots.draw_histogram(plt, report.histogram, *report.histogram_range,
                                                             title=histogram_title(report.histogram),
                                                             xlabel="bits per byte"),
                            plots.HISTOGRAM_HEIGHT, sys.stdout)
    return [plot] if plot is not None else [plots.too_narrow(), *histogram_lines(report.histogram)]


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
