"""`ragtui doctor`: print each check's verdict; exit 1 if any failed."""

from __future__ import annotations

import argparse

from ragtui.config import Settings
from ragtui.sanitize import one_line


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("doctor", help="check Ollama, models, WordNet, data dir and Chroma")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.config import user_config_path
    from ragtui.doctor import Verdict, run_checks

    config = args.config or user_config_path()
    print(f"config file: {config}" + ("" if config.is_file() else " (not there: shipped defaults only)"))
    checks = run_checks(settings)
    width = max(len(c.name) for c in checks)
    for check in checks:
        print(f"{check.verdict.value:<4}  {check.name:<{width}}  {one_line(check.detail)}")
    failed = sum(c.verdict is Verdict.FAIL for c in checks)
    print(f"\n{failed} problem(s) found." if failed else "\nAll good.")
    return 1 if failed else 0
