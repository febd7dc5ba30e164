"""Runs in a fresh interpreter (see test_heavy_imports.py): what a one-shot `ragtui query` starts before it imports
the rest of the engine, `Workspace.prepare_soon` over a collection with vectors and a name that does not exist.
Prints JSON: whether llama_index was imported by then (the load must not need it, or it would wait for that
import instead of running beside it), the vector indexes the prepare loaded (model and count), the heavy imports
that bypassed `ragtui.heavy.load`, and whether close() waited for the thread.

    python -m tests.prepare_driver DATA_DIR NAME
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from tests import import_audit

AUDIT = import_audit.install()      # before ragtui is imported

from ragtui.config import load_settings  # noqa: E402
from ragtui.workspace import Workspace  # noqa: E402


def main() -> None:
    settings = load_settings(user_file=Path("/dev/null"), env={}, overrides=[f"storage.data_dir={sys.argv[1]}"])
    name = sys.argv[2]
    workspace = Workspace(settings)
    workspace.prepare_soon([name, "no-such-collection"])
    for thread in threading.enumerate():
        if thread.name == "ragtui-prepare":
            thread.join()
    collection = workspace.collection(name)
    loaded = {model: index.count() for model, index in collection._vectors.items()}
    llama_index = "llama_index" in sys.modules
    workspace.close()
    print(json.dumps({"llama_index_imported": llama_index, "loaded": loaded, "bypasses": AUDIT.bypasses,
                      "threads_left": [t.name for t in threading.enumerate() if t.name == "ragtui-prepare"]}))


if __name__ == "__main__":
    main()
