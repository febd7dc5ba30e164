"""`ragtui history list|show|export|delete`: the saved research sessions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragtui.config import Settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("history", help="list, show, export or delete saved research sessions")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="sessions, newest first")
    listing.add_argument("-n", "--limit", type=int, default=50, help="at most this many (default 50)")
    for name, text in (("show", "print a session as Markdown"), ("delete", "delete a session")):
        actions.add_parser(name, help=text).add_argument("id", type=int)
    export = actions.add_parser("export", help="write a session as Markdown with numbered sources")
    export.add_argument("id", type=int)
    export.add_argument("-o", "--output", type=Path, metavar="FILE", help="file to write (default: stdout)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.history import HistoryError
    from ragtui.workspace import Workspace

    with Workspace(settings) as workspace:
        store = workspace.history
        if args.action == "list":
            sessions = store.list_sessions(limit=args.limit)
            if not sessions:
                print("No sessions yet: `ragtui ask \"...\"` starts one.")
            for s in sessions:
                print(f"{s.id:>5}  {s.created_at}  {s.stop_reason or '-':<9}  {s.relevant:>3}/{s.sources:<3} "
                      f"{','.join(s.collections):<20}  {s.query}")
        elif args.action in ("show", "export"):
            text = store.export_markdown(args.id)
            if getattr(args, "output", None):
                args.output.write_text(text, encoding="utf-8")
                print(f"wrote session {args.id} to {args.output}")
            else:
                sys.stdout.write(text)
        elif args.action == "delete":
            if not store.delete(args.id):
                raise HistoryError(f"no session {args.id} in {store.path}")
            print(f"deleted session {args.id}")
    return 0
