"""Runs in a fresh interpreter (see test_heavy_imports.py): the TUI engine's first calls, which each run in a
worker thread and each load heavy libraries, all started at once as a served TUI does on start-up (the
collections pane, the warm-up, opening the active collections) while another thread lists collections
directly and a CLI-style retrieval prepares two collections in parallel threads. Prints JSON: the errors
(type and message), whether every heavy library ended up loaded, and every first import of a heavy module
that bypassed `ragtui.heavy.load` (tests/import_audit.py).

    python -m tests.heavy_import_driver DATA_DIR
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path

from tests import import_audit

AUDIT = import_audit.install()      # before ragtui is imported

from ragtui.config import load_settings  # noqa: E402
from ragtui.tui.engine_door import AsyncWorkspace  # noqa: E402
from ragtui.workspace import Workspace  # noqa: E402

HEAVY = ("numpy", "whoosh", "chromadb", "llama_index.core", "wn")


def main() -> None:
    settings = load_settings(user_file=Path("/dev/null"), env={}, overrides=[f"storage.data_dir={sys.argv[1]}"])
    errors: list[str] = []
    engine = AsyncWorkspace(settings)
    names = engine.workspace.registry.names()
    start = threading.Barrier(3)

    def record(exc: BaseException) -> None:
        errors.append(f"{type(exc).__name__}: {exc}")

    def lister() -> None:
        workspace = Workspace(settings)
        start.wait()
        try:
            for _ in range(3):
                workspace.list_collections()
        except BaseException as exc:
            record(exc)
        finally:
            workspace.close()

    def preparer() -> None:
        workspace = Workspace(settings)
        start.wait()
        try:
            workspace.prepare(names)
        except BaseException as exc:
            record(exc)
        finally:
            workspace.close()

    async def tui() -> None:
        start.wait()
        results = await asyncio.gather(engine.collections(), engine.warm_up(), engine.prepare(names),
                                       engine.collections(), engine.wordnet_state(), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                record(result)

    threads = [threading.Thread(target=lister), threading.Thread(target=preparer)]
    for thread in threads:
        thread.start()
    asyncio.run(tui())
    for thread in threads:
        thread.join()
    engine.close()
    print(json.dumps({"errors": errors, "loaded": [m for m in HEAVY if m in sys.modules],
                      "bypasses": AUDIT.bypasses}))


if __name__ == "__main__":
    main()
