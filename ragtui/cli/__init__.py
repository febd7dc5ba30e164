"""Command line: `ragtui` opens the TUI; sub-commands script the engine headlessly.

Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error: every
RagtuiError a command raises is printed here, once, as `ragtui: <one line>`, and
its exit_code returned. Each sub-command lives in its own module, reaches the
engine through a Workspace and imports heavy libraries only when run, so `--help`
and the TUI's first frame stay fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ragtui import __version__
from ragtui.cli import (
    ask_cmd,
    collections_cmd,
    config_cmd,
    demo_cmd,
    doctor_cmd,
    eval_cmd,
    history_cmd,
    ingest_cmd,
    mcp_cmd,
    page_cmd,
    query_cmd,
    research_cmd,
    serve_cmd,
    wordnet_cmd,
)
from ragtui.config import Settings, load_settings, user_config_path
from ragtui.errors import RagtuiError, describe
from ragtui.sanitize import one_line

COMMANDS = (config_cmd, doctor_cmd, wordnet_cmd, ingest_cmd, collections_cmd, query_cmd, eval_cmd, ask_cmd,
            research_cmd, history_cmd, page_cmd, serve_cmd, mcp_cmd, demo_cmd)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragtui",
        description="Research over your own documents: ingest, retrieve, annotate, answer with citations.",
        epilog="Run without a command to open the terminal UI.",
    )
    parser.add_argument("--version", action="version", version=f"ragtui {__version__}")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help=f"user config file (default: {user_config_path()}, which follows XDG_CONFIG_HOME)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one setting, e.g. --set retrieve.top_k=32 (repeatable)")
    parser.add_argument("--data-dir", metavar="DIR", help="shorthand for --set storage.data_dir=DIR")
    parser.add_argument("--ollama-host", metavar="URL", help="shorthand for --set ollama.host=URL")
    parser.add_argument("--theme", metavar="NAME", help="shorthand for --set ui.theme=NAME")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    overrides = list(args.set)
    for flag, key in (("data_dir", "storage.data_dir"), ("ollama_host", "ollama.host"), ("theme", "ui.theme")):
        value = getattr(args, flag, None)
        if value is not None:
            overrides.append(f"{key}={value}")
    return load_settings(user_file=args.config, overrides=overrides, required=args.config is not None)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = settings_from_args(args)
        for notice in settings.notices:
            print(f"ragtui: {notice}", file=sys.stderr)
        if args.command is None:
            from ragtui.tui.app import run_app

            return run_app(settings)
        return args.run(args, settings)
    except RagtuiError as exc:
        print(f"ragtui: {one_line(describe(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ragtui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader stopped reading (`ragtui config show | head`): nothing is wrong, say nothing. Point
        # stdout at /dev/null so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
