"""`ragtui demo`: open the TUI on the shipped sample corpus, in a data dir of its own.

The first run ingests the corpus (in the app, with the ingest screen showing
progress); later runs open straight away. Without Ollama the app still opens,
in keyword-only mode, and says so.
"""

from __future__ import annotations

import argparse

from ragtui.config import Settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("demo", help="open the TUI on a small sample corpus (its own data dir)")
    parser.set_defaults(run=run)


def demo_settings(settings: Settings) -> Settings:
    """The demo keeps its data under <data dir>/demo unless the user named a data dir explicitly."""
    if settings.origins.get("storage.data_dir") == "--set":
        return settings
    return settings.replace(storage__data_dir=str(settings.data_dir / "demo"))


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.demo import COLLECTION, CORPUS
    from ragtui.tui.app import run_app

    settings = demo_settings(settings)
    manifest = settings.data_dir / "collections" / COLLECTION / "collection.json"
    first_run = not manifest.is_file()
    print(f"ragtui demo: data in {settings.data_dir}" + (" (first run: ingesting the sample corpus)" if first_run
                                                          else ""))
    return run_app(settings, ingest_on_start=(CORPUS, COLLECTION) if first_run else None)
