"""`ragtui history verify [ID ...|--all] [--json]`: saved sessions' citations checked against their documents as
they are now (`Workspace.verify_history`), the result stored for the TUI's marks.

Exit status: 0 when every citation checked is current, `STALE_EXIT` (3) when any is moved, changed or gone (so a
script tells "the answer no longer holds as cited" from a failure, 1, and a usage error, 2).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ragtui.cli.arg_types import record_id
from ragtui.errors import RagtuiError
from ragtui.sanitize import one_line

if TYPE_CHECKING:
    from ragtui.workspace import Workspace

STALE_EXIT = 3


def add_verify_action(actions: argparse._SubParsersAction) -> None:
    parser = actions.add_parser("verify", help="check saved sessions' citations against their documents as they are "
                                               f"now (exit status {STALE_EXIT} when any is stale)")
    parser.add_argument("ids", nargs="*", type=record_id, metavar="ID", help="the sessions to check")
    parser.add_argument("--all", action="store_true", help="check every saved session")
    parser.add_argument("--json", action="store_true", help="one JSON object: every session's checks")


def verify(args: argparse.Namespace, workspace: Workspace) -> int:
    if bool(args.ids) == bool(args.all):
        raise RagtuiError("history verify needs session ids or --all (not both)", exit_code=2)
    results = workspace.verify_history(None if args.all else args.ids)
    stale = [r for r in results if r.stale]
    citations = sum(len(r.stale) for r in stale)
    if args.json:
        print(json.dumps({"sessions": [r.to_json() for r in results], "checked": len(results),
                          "stale_sessions": len(stale), "stale_citations": citations}, indent=2))
    else:
        for result in stale:
            print(one_line(f"session {result.session_id}: {len(result.stale)} of {len(result.checks)} citations "
                           f"stale: {result.query}"))
            for check in result.stale:
                print(one_line(f"  [{check.number}] {check.cited}: {check.verdict}"))
        print(f"{len(results)} session{'' if len(results) == 1 else 's'} checked: "
              + (f"{len(stale)} with stale citations ({citations} in all)" if stale else "every citation current"))
    return STALE_EXIT if stale else 0
