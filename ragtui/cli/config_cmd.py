"""`ragtui config show`: the effective settings and where each one came from."""

from __future__ import annotations

import argparse
import json

from ragtui.config import Settings, shipped_config_path, user_config_path


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("config", help="show the effective configuration")
    cmds = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    show = cmds.add_parser("show", help="print every setting with its origin")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(run=run_show)


def run_show(args: argparse.Namespace, settings: Settings) -> int:
    rows = [(key, value, settings.origins.get(key, "default (config.toml)"))
            for key, value in settings.flat().items()]
    if args.json:
        print(json.dumps({k: {"value": v, "origin": o} for k, v, o in rows}, indent=2))
        return 0
    print(f"# defaults: {shipped_config_path()}")
    print(f"# user file: {user_config_path() if args.config is None else args.config}")
    print(f"# data dir: {settings.data_dir}")
    width = max(len(k) for k, _, _ in rows)
    for key, value, origin in rows:
        shown = json.dumps(value) if not isinstance(value, bool) else str(value).lower()   # secrets: "***"
        print(f"{key:<{width}}  {shown:<28}  {origin}")
    return 0
