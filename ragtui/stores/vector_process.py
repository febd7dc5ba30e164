"""An embedded Chroma's vector indexes served from a process of their own, for the length of a large ingest.

chromadb's Rust bindings hold Python's lock (GIL) for the whole of an `add`,
`upsert`, `update`, `delete` or `count` (they call `runtime.block_on` without
`py.allow_threads`; `get` and `query` release it), so in the ingesting process
every HNSW insertion stopped the reading, the keyword index's batches and, in the
TUI, the event loop. Here one spawned process owns the embedded client; the
ingesting process sends it each call over a pipe and waits for the answer with
its lock released, so the reading goes on while the graph grows.

The calling process keeps every rule of the multi-process store (library.py): it
takes `chroma.lock` around each call and bumps the generation after a write, as
for its own writes; only its own embedded system, when it has one, is not told
that it holds the new generation, so it reloads before its next read.

The server dies with the process that started it (Linux's parent-death signal;
elsewhere, at its next read of the closed pipe): an orphan must never write while
the next ingest reads. Nothing it prints reaches the terminal, and Ctrl-C in the
terminal is the caller's to handle.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Collection, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtui.errors import RagtuiError
from ragtui.model.chunks import Chunk
from ragtui.spawning import spawn_context, start_as_child_of

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from ragtui.config_sections import ChromaSettings

START_TIMEOUT_S = 120.0        # the server's imports and client; the calls themselves wait as long as Chroma does


class VectorProcessGone(RagtuiError):
    """The process writing the vectors stopped (killed, or out of memory): what it had not stored stays pending."""


class VectorProcess:
    """A spawned process owning the embedded Chroma at `path`; `index(...)` gives one collection's proxy."""

    def __init__(self, settings: ChromaSettings, path: Path) -> None:
        context = spawn_context()
        self._conn, child = context.Pipe()
        self._lock = threading.Lock()        # one call at a time on the pipe, from whichever thread
        self._process: BaseProcess = context.Process(target=_serve, args=(child, settings, str(path), os.getpid()),
                                                     name="ragtui-vectors", daemon=True)
        self._process.start()
        child.close()
        self._ready = False

    def index(self, name: str, model: str, *, hnsw_ef: int, hnsw_m: int) -> RemoteVectorIndex:
        return RemoteVectorIndex(self, (name, model, hnsw_ef, hnsw_m), model)

    def call(self, key: tuple[str, str, int, int], method: str, *args: Any, **kwargs: Any) -> Any:
        """`method(*args, **kwargs)` on the server's VectorIndex for `key`; its exception is raised here."""
        with self._lock:
            if not self._ready:
                self._answer(START_TIMEOUT_S)
                self._ready = True
            try:
                self._conn.send((key, method, args, kwargs))
            except (BrokenPipeError, ConnectionError, EOFError) as exc:
                raise self._gone() from exc
            return self._answer(None)

    def _answer(self, timeout: float | None) -> Any:
        if timeout is not None and not self._conn.poll(timeout):
            raise self._gone(f"it did not start within {timeout:.0f} s")
        try:
            status, value = self._conn.recv()
        except (EOFError, ConnectionError, OSError) as exc:
            raise self._gone() from exc
        if status == "error":
            raise value
        return value

    def _gone(self, why: str = "") -> VectorProcessGone:
        self._process.join(timeout=1.0)
        code = self._process.exitcode
        said = why or (f"it exited with code {code}" if code is not None and code >= 0
                       else f"it was killed by signal {-code}" if code is not None else "its pipe closed")
        return VectorProcessGone(f"the process writing the vectors stopped ({said}); the chunks it had not "
                                 "stored stay to embed on the next ingest")

    def close(self) -> None:
        """Ask the server to close its client and exit; kill it if it does not within a few seconds."""
        with self._lock:
            with contextlib.suppress(OSError, ValueError):
                self._conn.send(None)
            self._process.join(timeout=10.0)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(timeout=5.0)
            self._conn.close()


class RemoteVectorIndex:
    """VectorIndex's interface, each call answered by the VectorProcess (the chunks travel as ids and files)."""

    def __init__(self, process: VectorProcess, key: tuple[str, str, int, int], model: str) -> None:
        self._process = process
        self._key = key
        self.model = model

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._process.call(self._key, method, *args, **kwargs)

    def forget(self) -> None:
        """Nothing to drop here: the server's index keeps its counts, and only this run writes meanwhile."""

    def add(self, chunks: Sequence[Chunk], embeddings: Sequence[Any]) -> None:
        import numpy as np

        if chunks:
            self._call("add_rows", [c.id for c in chunks], [c.meta.source for c in chunks],
                       np.asarray(embeddings, dtype=np.float32))

    def delete_ids(self, ids: Sequence[str]) -> None:
        if ids:
            self._call("delete_ids", list(ids))

    def drop(self) -> None:
        self._call("drop")

    def hnsw(self) -> dict[str, Any]:
        return dict(self._call("hnsw"))

    def ids(self) -> set[str]:
        return set(self._call("ids"))

    def vectors(self, ids: Sequence[str]) -> dict[str, Any]:
        return dict(self._call("vectors", list(ids))) if ids else {}

    def count(self) -> int:
        return int(self._call("count"))

    def dimension(self) -> int | None:
        got = self._call("dimension")
        return None if got is None else int(got)

    def query(self, embedding: Sequence[float], top_k: int, *, sources: Sequence[str] | None = None,
              ids: Collection[str] | None = None) -> list[tuple[str, float]]:
        return list(self._call("query", list(embedding), top_k, sources=None if sources is None else list(sources),
                               ids=None if ids is None else list(ids)))


def _serve(conn: Connection, settings: ChromaSettings, path: str, parent: int) -> None:
    """The server's main: open the client, say ready, answer calls until told to stop or the caller is gone."""
    start_as_child_of(parent)
    from ragtui.stores.vector import VectorIndex, chroma_client, copy_root

    try:
        client = chroma_client(settings, Path(path))
    except BaseException as exc:
        _send(conn, ("error", exc))
        return
    _send(conn, ("ok", None))
    indexes: dict[tuple[str, str, int, int], VectorIndex] = {}
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message is None:
                return
            key, method, args, kwargs = message
            try:
                if (index := indexes.get(key)) is None:
                    name, model, ef, m = key
                    index = indexes[key] = VectorIndex(client, name, model, hnsw_ef=ef, hnsw_m=m,
                                                       copies=copy_root(Path(path)))
                result = getattr(index, method)(*args, **kwargs)
                if method == "drop":
                    indexes.pop(key, None)
                answer: tuple[str, Any] = ("ok", result)
            except Exception as exc:
                answer = ("error", exc)
            if not _send(conn, answer):
                return
    finally:
        with contextlib.suppress(Exception):
            client.close()


def _send(conn: Connection, answer: tuple[str, Any]) -> bool:
    """Send an answer; an exception that does not pickle goes as its text. False when the caller is gone."""
    try:
        conn.send(answer)
    except (BrokenPipeError, ConnectionError, OSError):
        return False
    except Exception:
        status, value = answer
        text = f"{type(value).__name__}: {value}" if status == "error" else "an answer that could not be sent"
        try:
            conn.send(("error", RagtuiError(f"the vector store failed: {text}"[:2000])))
        except (BrokenPipeError, ConnectionError, OSError):
            return False
    return True
