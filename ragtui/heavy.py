"""The heavy libraries, imported once per process, in one fixed order, by one thread at a time.

numpy and llama_index have circular imports: two threads importing them at once can each see the other's
module half initialised and fail with `ImportError: cannot import name ... from partially initialized
module 'numpy._typing'`. Every engine path that runs in worker threads (a collection opened for the
collections pane, the TUI's warm-up, stores opened in parallel, a retrieval, an ingest) first calls
`load`, which imports what it needs under one process-wide lock; once a library is loaded, later imports
of it anywhere are plain lookups in sys.modules. The lock and the set of loaded names shadow Python's
own import state, which is global to the process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


def _numpy() -> None:
    import numpy  # noqa: F401


def _whoosh() -> None:
    import whoosh.index  # noqa: F401


def _wn() -> None:
    import wn  # noqa: F401


def _chromadb() -> None:
    import chromadb  # noqa: F401


def _llama_index() -> None:
    import llama_index.core
    import llama_index.embeddings.ollama
    import llama_index.llms.ollama  # noqa: F401


def _pymupdf() -> None:
    import pymupdf  # noqa: F401


# Lightest first, so that a caller that needs only the keyword store (numpy, whoosh) does not wait for the rest.
ORDER: tuple[tuple[str, Callable[[], None]], ...] = (
    ("numpy", _numpy), ("whoosh", _whoosh), ("wn", _wn), ("chromadb", _chromadb), ("llama_index", _llama_index),
    ("pymupdf", _pymupdf))
NAMES = tuple(name for name, _ in ORDER)

_LOCK = threading.Lock()
_loaded: set[str] = set()


def load(through: str = NAMES[-1]) -> None:
    """Import the libraries of ORDER up to and including `through`, under the lock (a thread arriving while
    another imports waits for it). Cheap once they are loaded."""
    wanted = ORDER[:NAMES.index(through) + 1]
    if _loaded.issuperset(name for name, _ in wanted):
        return
    with _LOCK:
        for name, step in wanted:
            if name not in _loaded:
                step()
                _loaded.add(name)
