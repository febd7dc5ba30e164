"""The heavy libraries, imported once per process, in one fixed order, by one thread at a time.

numpy and llama_index have circular imports: two threads importing them at once can each see the other's
module half initialised and fail with `ImportError: cannot import name ... from partially initialized
module 'numpy._typing'`. Every engine path that runs in worker threads (a collection opened for the
collections pane, the TUI's warm-up, stores opened in parallel, a retrieval, an ingest) first calls
`load`, which imports what it needs under one process-wide lock; once a library is loaded, later imports
of it anywhere are plain lookups in sys.modules. The lock and the set of loaded names shadow Python's
own import state, which is global to the process.

Each step imports every module of its library that any ragtui module imports (tests/test_layering.py holds
this), so after `load(step)` a thread's imports of them are lookups, never a first import outside the lock;
a module that imports a heavy library at its top calls `load` first, and a function that does so is reached
only after a `load` (tests/import_audit.py records any first import that bypasses it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable


def _numpy() -> None:
    import numpy
    import numpy.typing  # noqa: F401


def _whoosh() -> None:
    import whoosh.analysis
    import whoosh.codec.whoosh3
    import whoosh.columns
    import whoosh.fields
    import whoosh.filedb.compound
    import whoosh.filedb.filestore
    import whoosh.index
    import whoosh.reading
    import whoosh.writing  # noqa: F401


def _wn() -> None:
    import wn
    import wn.morphy  # noqa: F401


def _chromadb() -> None:
    import chromadb
    import chromadb.api.shared_system_client
    import chromadb.config  # noqa: F401


def _llama_index() -> None:
    import llama_index.core
    import llama_index.core.base.base_retriever
    import llama_index.core.bridge.pydantic
    import llama_index.core.ingestion
    import llama_index.core.llms
    import llama_index.core.node_parser
    import llama_index.core.postprocessor
    import llama_index.core.postprocessor.types
    import llama_index.core.schema
    import llama_index.embeddings.ollama
    import llama_index.llms.ollama  # noqa: F401


def _pymupdf() -> None:
    import pymupdf  # noqa: F401


def _openai_like() -> None:
    import llama_index.llms.openai_like  # noqa: F401


# Lightest first, so that a caller that needs only the keyword store (numpy, whoosh) does not wait for the rest.
# The OpenAI-compatible client comes last, named only by the code that uses it (llm.provider = "openai").
ORDER: tuple[tuple[str, Callable[[], None]], ...] = (
    ("numpy", _numpy), ("whoosh", _whoosh), ("wn", _wn), ("chromadb", _chromadb), ("llama_index", _llama_index),
    ("pymupdf", _pymupdf), ("llama_index.llms.openai_like", _openai_like))
NAMES = tuple(name for name, _ in ORDER)

_LOCK = threading.Lock()
_loaded: set[str] = set()


def load(through: str = "pymupdf") -> None:
    """Import the libraries of ORDER up to and including `through`, under the lock (a thread arriving while
    another imports waits for it); by default every step but the optional OpenAI-compatible client. Cheap
    once they are loaded."""
    wanted = ORDER[:NAMES.index(through) + 1]
    if _loaded.issuperset(name for name, _ in wanted):
        return
    with _LOCK:
        for name, step in wanted:
            if name not in _loaded:
                step()
                _loaded.add(name)
