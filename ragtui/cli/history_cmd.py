"""`ragtui history list|show|export|bundle|delete|reannotate|rescue|drop|judgments|verify`: the saved research
sessions, and steering them (`judgments`, the relevance judgments they hold, is in judgments_cmd; `verify`, their
citations checked against the documents as they are now, in history_verify_cmd).

`reannotate`, `rescue` and `drop` change which sources the next answer uses;
`ragtui ask --resynthesize --session ID` then answers again from them.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragtui.bibliography.export import FORMATS
from ragtui.cli.arg_types import record_id
from ragtui.cli.history_verify_cmd import add_verify_action, verify
from ragtui.cli.judgments_cmd import add_history_action, list_judgments
from ragtui.config import Settings
from ragtui.errors import RagtuiError
from ragtui.sanitize import clean, one_line

if TYPE_CHECKING:
    from ragtui.research.session import ResearchSession
    from ragtui.workspace import Workspace


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("history", help="list, show, export, delete, steer or verify saved research sessions")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="sessions, newest first")
    listing.add_argument("-n", "--limit", type=record_id, default=50, help="at most this many (default 50)")
    for name, text in (("show", "print a session as Markdown"), ("delete", "delete a session")):
        actions.add_parser(name, help=text).add_argument("id", type=record_id)
    export = actions.add_parser("export", help="write a session as Markdown with numbered sources, or its cited "
                                               "documents as BibTeX or CSL-JSON")
    export.add_argument("id", type=record_id)
    export.add_argument("--format", choices=FORMATS, default="markdown",
                        help="markdown (default): the whole session and its checked quotes; bibtex or csl-json: one "
                             "entry per cited document, each [N] as a citation with its pages")
    export.add_argument("-o", "--output", type=Path, metavar="FILE", help="file to write (default: stdout)")
    bundle = actions.add_parser("bundle", help="write a session as one JSON file a colleague can check with "
                                               "`ragtui verify`, offline: questions, answers, cited texts with their "
                                               "documents' sha256, verdicts, overrides, models, settings and checks")
    bundle.add_argument("id", type=record_id)
    bundle.add_argument("-o", "--output", type=Path, metavar="FILE", required=True, help="file to write")
    again = actions.add_parser("reannotate", help="annotate a session's sources again, with another model or "
                                                  "prompt file")
    again.add_argument("id", type=record_id)
    again.add_argument("--model", metavar="M", help="annotation model (default: the session's)")
    again.add_argument("--prompt-file", type=Path, metavar="F",
                       help="annotation template with the tokens CONTENT and QUERY (default: annotation.prompt_file)")
    again.add_argument("--source", type=record_id, nargs="+", metavar="N",
                       help="only these sources (any turn's; default: every source of the latest turn)")
    for name, text in (("rescue", "put a filtered source back into the synthesis set"),
                       ("drop", "take a source out of the synthesis set")):
        action = actions.add_parser(name, help=text)
        action.add_argument("id", type=record_id)
        action.add_argument("number", type=record_id, metavar="N", help="the source's [N]")
    add_history_action(actions)
    add_verify_action(actions)
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
                turns = f"{s.turns} turns" if s.turns > 1 else "1 turn"
                stale = f"  ({s.stale} stale: `ragtui history verify {s.id}`)" if s.stale else ""
                print(one_line(f"{s.id:>5}  {s.created_at}  {s.stop_reason or '-':<9}  "
                               f"{s.relevant:>3}/{s.sources:<3} {turns:<8} {','.join(s.collections):<20}  {s.query}"
                               f"{stale}"))
        elif args.action in ("show", "export"):
            text = workspace.export_text(args.id, getattr(args, "format", "markdown"))
            if getattr(args, "output", None):
                _write(args.output, text)
                print(f"wrote session {args.id} to {args.output}")
            else:
                sys.stdout.write(clean(text))
        elif args.action == "bundle":
            from ragtui.bundle.write import dumps

            _write(args.output, dumps(workspace.bundle(args.id)))
            print(one_line(f"wrote session {args.id} as a bundle to {args.output}; `ragtui verify {args.output}` "
                           "checks it"))
        elif args.action == "delete":
            if not store.delete(args.id):
                raise HistoryError(f"no session {args.id} in {store.path}")
            print(f"deleted session {args.id}")
        elif args.action == "reannotate":
            return _reannotate(args, workspace)
        elif args.action == "judgments":
            return list_judgments(args, workspace)
        elif args.action == "verify":
            return verify(args, workspace)
        else:
            session = _reopen_with(workspace, args.id, [args.number])
            source = session.rescue(args.number) if args.action == "rescue" else session.drop(args.number)
            where = "in" if source.relevant else "out of"
            print(f"[{source.number}] {one_line(source.chunk.label)} is now {where} the synthesis set "
                  f"of session {args.id}; "
                  f"`ragtui ask --resynthesize --session {args.id}` answers again")
    return 0


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except (OSError, ValueError) as exc:    # a folder, no permission, a name no file can have
        raise RagtuiError(f"cannot write {path}: {getattr(exc, 'strerror', None) or exc}", exit_code=2) from None


def _reopen_with(workspace: Workspace, session_id: int, numbers: Sequence[int]) -> ResearchSession:
    """The session, after checking that it has sources [numbers] (a usage error naming what it has)."""
    session = workspace.reopen(session_id)
    for number in numbers:
        try:
            session.source(number)
        except KeyError as exc:
            raise RagtuiError(f"session {session_id}: {exc.args[0]}", exit_code=2) from None
    return session


def _reannotate(args: argparse.Namespace, workspace: Workspace) -> int:
    from ragtui.cli.ask_cmd import TextPrinter, drive
    from ragtui.llm.annotate import load_template

    if args.prompt_file is not None:
        load_template(args.prompt_file)          # a missing file or token: one error before any call
    session = _reopen_with(workspace, args.id, args.source or [])
    events = session.reannotate(args.source, model=args.model, prompt_file=args.prompt_file)
    ok = asyncio.run(drive(session, events, TextPrinter(sys.stdout, sys.stderr)))
    if ok:
        print(f"`ragtui ask --resynthesize --session {args.id}` answers again from the new Relevant set")
    return 0 if ok else 1
