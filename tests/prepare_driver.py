"""Runs in a fresh interpreter (see test_heavy_imports.py): what a one-shot `ragtui query` starts before it imports
the rest of the engine, `Workspace.prepare_soon` over a collection with vectors and a name that does not exist.
Prints JSON: the prepare threads still running after a close() called at once (close must wait for them),
whether llama_index was imported once a prepare had ended (the load must not need it, or it would wait for that
import instead of running beside it), the vector indexes it loaded (model and count), and the heavy imports that
bypassed `ragtui.heavy.load`.

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


def prepare_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ragtui-prepare"]


def main() -> None:
    settings = load_settings(user_file=Path("/dev/null"), env={}, overrides=[f"storage.data_dir={sys.argv[1]}"])
    name = sys.argv[2]
    workspace = Workspace(settings)
    workspace.prepare_soon([name, "no-such-collection"])
    workspace.close()                                   # at once: it must wait for the thread
    left = [t.name for t in prepare_threads()]
    workspace.prepare_soon([name])
    for thread in prepare_threads():
        thread.join()
    collection = workspace.collection(name)
    loaded = {model: index.count() for model, index in collection._vectors.items()}
    llama_index = "llama_index" in sys.modules
    workspace.close()
    print(json.dumps({"llama_index_imported": llama_index, "loaded": loaded, "bypasses": AUDIT.bypasses,
                      "threads_left_by_close": left}))


if __name__ == "__main__":
    main()
