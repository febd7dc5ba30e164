"""`ragtui ingest PATH... -c NAME`: ingest with a progress bar (plain lines when not a TTY), then the report; with
`--watch`, again after every change in the folders (`ingest_watch`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ragtui.config import Settings
from ragtui.sanitize import one_line

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from ragtui.events import Event, IngestProgress

BAR = 24


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("ingest", help="ingest files and folders into a collection")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders")
    parser.add_argument("-c", "--collection", required=True, metavar="NAME", help="collection (created if new)")
    parser.add_argument("--topic", default="", help="what the collection is about, told to the annotator and the "
                        "answer (set on a new collection, or a new topic for it)")
    parser.add_argument("--sync", action="store_true",
                        help="remove chunks of files that are gone from the given folders")
    parser.add_argument("--watch", action="store_true",
                        help="after the ingest, watch the folders and ingest again (with --sync) whenever files "
                             "are added, changed or removed, until Ctrl-C")
    parser.add_argument("--json", action="store_true",
                        help="no progress; the closing report as one JSON object (the sessions re-checked among it)")
    parser.set_defaults(run=run)


def format_progress(event: IngestProgress, width: int | None = None) -> str:
    """One line: files, chunks (counted from the start), embeddings/s, the ETA of the whole job, and the
    current file shortened from the middle so the line fits `width` columns (a longer line would wrap, and
    the next "\r" would leave the wrapped part behind as a trail of lines)."""
    from ragtui.textfit import shorten_middle

    eta = "--:--" if event.eta_s is None else f"{int(event.eta_s) // 60}:{int(event.eta_s) % 60:02d}"
    line = (f"{event.files_done}/{event.files_total} files  {event.chunks} chunks  "
            f"{event.embedded} embedded  {event.embed_rate:.1f} emb/s  ETA {eta}")
    if width is None:
        return f"{line}  {one_line(event.current)}".rstrip()
    room = width - len(line) - 2
    if room >= 8 and event.current:
        line += "  " + shorten_middle(one_line(event.current), room)
    return line[:width]


def bar(done: int, total: int) -> str:
    filled = BAR * done // total if total else BAR
    return "[" + "#" * filled + "-" * (BAR - filled) + "]"


async def _ingest(args: argparse.Namespace, settings: Settings, out: TextIO) -> int:
    from ragtui.workspace import Workspace

    async with Workspace(settings) as workspace, \
            aclosing(workspace.ingest(args.paths, args.collection, topic=args.topic, sync=args.sync)) as events:
        return await show_ingest(events, out, as_json=args.json)


async def show_ingest(events: AsyncIterator[Event], out: TextIO, *, as_json: bool = False) -> int:
    """Print an ingest's events (progress, skipped files, notices, the report; with `as_json` only the report, as
    JSON); its exit code (1: interrupted)."""
    from ragtui.events import FileSkipped, IngestFinished, IngestProgress, Notice
    from ragtui.ingest.report import report_json, report_lines

    tty = out.isatty() and not as_json
    status = 0
    async for event in _ending_the_bar(events, out if tty else None):
        if as_json and isinstance(event, IngestFinished):
            out.write(json.dumps(report_json(event.report), indent=2) + "\n")
            status = 1 if event.report.interrupted else 0
        elif as_json and isinstance(event, IngestProgress | FileSkipped):
            continue
        elif isinstance(event, IngestProgress):
            if tty:
                width = shutil.get_terminal_size().columns - 1      # the last column would wrap
                head = bar(event.files_done, event.files_total)
                visible = f"{head} {format_progress(event, width - len(head) - 1)}"[:width]
                out.write("\r\x1b[2K" + visible)
            else:
                out.write(f"progress: {format_progress(event)}\n")
            out.flush()
        elif isinstance(event, FileSkipped):
            line = f"skipped: {one_line(event.source)}: {one_line(event.reason)}\n"
            out.write(("\r\x1b[2K" if tty else "") + line)
        elif isinstance(event, Notice):
            if tty:
                out.write("\n")
            print(f"{event.level}: {one_line(event.message)}", file=sys.stderr)
        elif isinstance(event, IngestFinished):
            if tty:
                out.write("\n")
            out.write("".join(one_line(line) + "\n" for line in report_lines(event.report)))
            status = 1 if event.report.interrupted else 0
    return status


async def _ending_the_bar(events: AsyncIterator[Event], tty: TextIO | None) -> AsyncIterator[Event]:
    """The events; when the ingest fails (a full disk, a busy collection) the progress bar's line is ended
    first, so the error line does not start in the middle of it."""
    try:
        async for event in events:
            yield event
    except Exception:
        if tty is not None:
            tty.write("\n")
            tty.flush()
        raise


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.watch:
        from ragtui.cli.ingest_watch import watch

        if args.json:
            from ragtui.errors import RagtuiError

            raise RagtuiError("--json prints one ingest's report; --watch goes on ingesting: pass one of them",
                              exit_code=2)

        return asyncio.run(watch(args.paths, args.collection, args.topic, settings, sys.stdout, show_ingest))
    try:
        return asyncio.run(_ingest(args, settings, sys.stdout))
    except KeyboardInterrupt:
        print(f"\nragtui: ingest interrupted; the stores are consistent. Run the same command again to finish "
              f"(collection {args.collection!r} reads as interrupted until then).", file=sys.stderr)
        return 130
