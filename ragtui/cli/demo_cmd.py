"""`ragtui demo`: open the TUI on the shipped sample corpus, in a data dir of its own.

The first run ingests the corpus (in the app, with the ingest screen showing
progress); later runs open straight away, unless that first ingest was cut
(a crash, a kill): then the next run ingests again and resumes it. Without Ollama the app still opens,
in keyword-only mode, and says so.
"""

from __future__ import annotations

import argparse

from ragtui.config import Settings
from ragtui.errors import RagtuiError


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


def ingested(settings: Settings, name: str) -> bool:
    """Whether the demo collection's ingest has run to its end. Not when the collection is missing, or when an
    ingest of it was cut (a crash or a kill leaves its manifest saying "interrupted", or "empty" when the cut
    came before its first batch): the next start ingests again, and the ingest resumes from its records.
    A damaged collection counts as ingested: the app shows it as damaged rather than writing into it."""
    from ragtui.library import CollectionRegistry

    registry = CollectionRegistry(settings)
    if name not in registry.names():
        return False
    try:
        return registry.open(name).state not in ("empty", "interrupted")
    except (RagtuiError, OSError, ValueError):   # an unreadable manifest: Collection.damage() says why, in the app
        return True


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.demo import COLLECTION, CORPUS
    from ragtui.tui.app import run_app

    settings = demo_settings(settings)
    first_run = not ingested(settings, COLLECTION)
    print(f"ragtui demo: data in {settings.data_dir}" + (" (first run: ingesting the sample corpus)" if first_run
                                                          else ""))
    return run_app(settings, ingest_on_start=(CORPUS, COLLECTION) if first_run else None)
