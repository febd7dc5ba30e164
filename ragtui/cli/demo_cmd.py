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


DEMO_CHUNK_TOKENS = 256  # the sample files are short: small chunks give several sources and pages per file


def demo_settings(settings: Settings) -> Settings:
    """Data under <data dir>/demo and small chunks, unless the user configured either (file, env or flag)."""
    def defaulted(key: str) -> bool:
        return settings.origins.get(key, "default").startswith("default")

    changes: dict[str, object] = {}
    if defaulted("storage.data_dir"):
        changes["storage__data_dir"] = str(settings.data_dir / "demo")
    if defaulted("chunk.size_tokens"):
        changes["chunk__size_tokens"] = DEMO_CHUNK_TOKENS
    return settings.replace(**changes) if changes else settings


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.demo import COLLECTION, CORPUS
    from ragtui.tui.app import run_app

    settings = demo_settings(settings)
    manifest = settings.data_dir / "collections" / COLLECTION / "collection.json"
    first_run = not manifest.is_file()
    print(f"ragtui demo: data in {settings.data_dir}" + (" (first run: ingesting the sample corpus)" if first_run
                                                          else ""))
    return run_app(settings, ingest_on_start=(CORPUS, COLLECTION) if first_run else None)
