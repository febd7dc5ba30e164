"""Vectors of one embedding model for one collection, in Chroma: ids, vectors and each chunk's file, nothing else.

Chroma runs embedded (a PersistentClient in the collection's folder) or as a server
(`[chroma] host/port`); nothing else changes, except that a server can stop answering:
`server_down` tells that apart from a damaged store, and `VectorServerDown` says so.

What is written is what the vector leg reads back: a chunk's id, its vector, and its
file (`source`, the one field a search filter asks Chroma for, `where` on it). The text
and the rest of a chunk live in the collection's records and keyword index, which the
retriever reads a hit's chunk from. LlamaIndex's `ChromaVectorStore.add`
(llama-index-vector-stores-chroma 0.6, no longer a dependency) has no option to
leave them out: it always sends each node's text as Chroma's document (which
Chroma also puts in a trigram full-text index) and every metadata field plus
`_node_content` (the node as JSON), and its `query` reads the documents back; at
1M chunks those took 16 of the collection's 25 GB. So the chromadb collection is
written and queried directly. A collection written before keeps its documents and
metadata and is read as it is (a query asks Chroma for ids and distances only); a
chunk written again is written the lean way, and `collections reembed` rewrites all.
Scores come back as cosine similarity: Chroma's cosine space gives distance = 1 - cos.

Beside an embedded Chroma, each index keeps an 8-bit copy of its vectors (`vector_copy.py`), written
with every Chroma write: while another thread of the process is still loading Chroma's HNSW index (its
first read, seconds at 1M vectors), the counts and an unfiltered search are answered from the copy.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ragtui import heavy
from ragtui.errors import RagtuiError
from ragtui.model.chunks import Chunk
from ragtui.stores.vector_copy import CopyView, VectorCopy

if TYPE_CHECKING:
    from ragtui.config_sections import ChromaSettings

# Process-wide, like chromadb's own cache of one system per path: clients are created and released one at a time.
_CLIENT_LOCK = threading.Lock()
# Per persist path, also process-wide for the same reason: the collection generation this process's cached
# Chroma system has loaded, and how many times that system was restarted to load a newer one.
_LOADED: dict[str, int] = {}
_EPOCH: dict[str, int] = {}


COPY_FOLDER = "vector_copy"   # in the collection folder, beside chroma/: one VectorCopy per Chroma collection

# What chromadb's HttpClient raises when its first request (the tenant check) meets no server.
_NO_SERVER = "Could not connect to a Chroma server"


class VectorServerDown(RagtuiError):
    """The Chroma server did not answer: vectors can be neither read nor written until it does."""

    def __init__(self, settings: ChromaSettings, reason: str) -> None:
        super().__init__(f"the Chroma server at {server_address(settings)} is not reachable ({reason})")
        self.address = server_address(settings)
        self.reason = reason


def copy_root(chroma_path: Path) -> Path:
    """Where the vector copies of the embedded Chroma in `chroma_path` live."""
    return chroma_path.parent / COPY_FOLDER


def server_address(settings: ChromaSettings) -> str:
    return f"{settings.host}:{settings.port}"


def server_down(exc: BaseException) -> str | None:
    """Why the Chroma server did not answer, when that is what `exc` (or an error it came from) says: a
    connection refused, reset or timed out; None for any other error (a damaged store, a refused request)."""
    import httpx

    seen: set[int] = set()
    found = None
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, httpx.TransportError):
            text = " ".join(str(current).split())[:200]
            return f"{type(current).__name__}: {text}" if text else type(current).__name__
        if isinstance(current, ValueError) and str(current).startswith(_NO_SERVER):
            found = "no answer to its first request"
        current = current.__cause__ or current.__context__
    return found


def chroma_client(settings: ChromaSettings, path: Path) -> Any:
    """An embedded client for `path`, or an HTTP client for the configured server (each request bounded by
    `chroma.timeout`; VectorServerDown when it does not answer); telemetry off."""
    heavy.load("chromadb")
    import chromadb
    from chromadb.config import Settings as ChromaConfig

    config = ChromaConfig(anonymized_telemetry=False, allow_reset=False)
    with _CLIENT_LOCK:
        if settings.host:
            try:
                client = chromadb.HttpClient(host=settings.host, port=settings.port, settings=config)
            except Exception as exc:
                if (reason := server_down(exc)) is not None:
                    raise VectorServerDown(settings, reason) from exc
                raise
            _bound_requests(client, settings.timeout)
            return client
        path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=config)


def _bound_requests(client: Any, seconds: float) -> None:
    """Give the HTTP client's requests a deadline: chromadb's own session waits for ever (`timeout=None` in
    chromadb.api.fastapi.FastAPI; private API, as chromadb offers no setting for it)."""
    import httpx

    client._server._session.timeout = httpx.Timeout(seconds)


def release_embedded(path: Path) -> None:
    """Stop the in-process Chroma system for `path` even if other clients still refer to it.

    Chroma caches one system per persist directory; after the folder is removed a
    cached system would keep writing to deleted files, so deletion drops it (private
    API: chromadb has no public per-path release).
    """
    with _CLIENT_LOCK:
        _stop_system(str(path))
        _LOADED.pop(str(path), None)
        _EPOCH[str(path)] = _EPOCH.get(str(path), 0) + 1


def embedded_epoch(path: Path, generation: int) -> int:
    """Make sure this process's Chroma system for `path` has loaded `generation`; its epoch after that.

    An embedded Chroma loads a collection's HNSW index once and never sees what another
    process adds later, so when the collection's generation moved on, the cached system
    is stopped; clients of an older epoch must then be recreated (Collection does this).
    """
    key = str(path)
    with _CLIENT_LOCK:
        if _LOADED.get(key, generation) != generation:
            _stop_system(key)
            _EPOCH[key] = _EPOCH.get(key, 0) + 1
        _LOADED[key] = generation
        return _EPOCH.get(key, 0)


def note_written(path: Path, generation: int) -> None:
    """This process wrote `generation` itself, so its system for `path` already holds it."""
    with _CLIENT_LOCK:
        _LOADED[str(path)] = generation


def _stop_system(key: str) -> None:
    """Drop chromadb's cached system for a persist path (private API: chromadb has no public per-path release)."""
    from chromadb.api.shared_system_client import SharedSystemClient

    system = SharedSystemClient._identifier_to_system.pop(key, None)
    SharedSystemClient._identifier_to_refcount.pop(key, None)
    if system is not None:
        system.stop()


def chroma_name(prefix: str, model: str) -> str:
    """A Chroma collection name (3-512 chars of [A-Za-z0-9._-], alphanumeric at both ends).

    The readable slug folds characters Chroma refuses, so "my_docs" and "my-docs", or
    "model:v1.5" and "model-v1.5", would meet; a hash of the exact pair keeps them apart
    (on a shared Chroma server they would otherwise overwrite each other's vectors).
    """
    slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{prefix}-{model}").strip("-._")
    digest = hashlib.sha1(f"{prefix}\0{model}".encode()).hexdigest()[:8]
    return f"{slug}-{digest}"


class BadVectors(ValueError):
    """An embedding answer that cannot be stored or searched; the message says what is wrong with it."""


def check_vectors(vectors: Any, count: int, dim: int | None,
                  whose: str = "the collection's index") -> list[list[float]]:
    """`count` vectors of `dim` dimensions (or of one shared dimension when `dim` is None; `whose` says where
    `dim` comes from), every value a finite number, no vector all zeros and none too long to normalise, as
    lists of floats; otherwise BadVectors.

    The one rule for what a model's answer must be before Chroma sees it: a wrong-dimension batch fixes
    the index's dimension for good, and NaN, zero or overflowing vectors (values near 1e308, whose squared
    length is infinite) make cosine scores meaningless.
    """
    if not isinstance(vectors, (list, tuple)):
        raise BadVectors(f"expected a list of vectors, got {type(vectors).__name__}")
    if len(vectors) != count:
        raise BadVectors(f"{len(vectors)} vectors for {count} texts")
    out: list[list[float]] = []
    for i, vector in enumerate(vectors):
        if not isinstance(vector, (list, tuple)):
            raise BadVectors(f"vector {i + 1} is {type(vector).__name__}, not a list of numbers")
        if not vector:
            raise BadVectors(f"vector {i + 1} is empty")
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in vector):
            raise BadVectors(f"vector {i + 1} holds something other than numbers")
        try:
            floats = [float(x) for x in vector]
        except OverflowError:          # an integer past a float's range (1.8e308): hundreds of digits of it
            raise BadVectors(f"vector {i + 1} holds an integer too large for a floating-point number") from None
        if not all(map(math.isfinite, floats)):
            raise BadVectors(f"vector {i + 1} holds NaN or infinity")
        if not any(floats):
            raise BadVectors(f"vector {i + 1} is all zeros")
        if not math.isfinite(math.fsum(x * x for x in floats)):
            raise BadVectors(f"vector {i + 1} is too long to normalise (its values reach "
                             f"{max(map(abs, floats)):.3g}): its length is not a finite number")
        want = dim if dim is not None else (len(out[0]) if out else len(floats))
        if len(floats) != want:
            source = whose if dim is not None else "the batch's first"
            raise BadVectors(f"vector {i + 1} has {len(floats)} dimensions; {source} has {want}")
        out.append(floats)
    return out


class VectorStore(Protocol):
    """What the rest of ragtui uses of one model's vector index: a VectorIndex in this process, or its proxy
    served by a VectorProcess (stores/vector_process.py)."""

    model: str

    def forget(self) -> None: ...
    def add(self, chunks: Sequence[Chunk], embeddings: Sequence[Any]) -> None: ...
    def delete_ids(self, ids: Sequence[str]) -> None: ...
    def drop(self) -> None: ...
    def hnsw(self) -> dict[str, Any]: ...
    def ids(self) -> set[str]: ...
    def vectors(self, ids: Sequence[str]) -> dict[str, Any]: ...
    def count(self) -> int: ...
    def dimension(self) -> int | None: ...
    def query(self, embedding: Sequence[float], top_k: int, *, sources: Sequence[str] | None = None,
              ids: Collection[str] | None = None) -> list[tuple[str, float]]: ...


class VectorIndex:
    """One Chroma collection (cosine space) holding one model's vectors for a ragtui collection.

    Its HNSW graph is built with `hnsw_m` links per node (Chroma's max_neighbors, fixed when the
    collection is created) and searched with breadth `hnsw_ef` (ef_search, which a write brings
    up to date on a collection created with another). With `copies` (an embedded Chroma), it keeps its
    VectorCopy in `copies`/name.
    """

    def __init__(self, client: Any, name: str, model: str, *, hnsw_ef: int, hnsw_m: int,
                 copies: Path | None = None) -> None:
        self.model = model
        self.client = client
        self.hnsw_ef = hnsw_ef
        # No embedding function: vectors always come from Ollama, and Chroma's default one would
        # fetch an ONNX model from the internet the first time it was asked to embed.
        self.collection = client.get_or_create_collection(
            name, configuration={"hnsw": {"space": "cosine", "ef_search": hnsw_ef, "max_neighbors": hnsw_m}},
            embedding_function=None)
        # count() and dimension() as last read: each is a round trip through Chroma (~7-9 ms at 110k
        # vectors) that every query asked for; our own writes and `forget()` drop them.
        self._count: int | None = None
        self._dimension: tuple[int | None] | None = None
        self._copy = VectorCopy(copies / name) if copies is not None else None
        self._loading = threading.Lock()     # held by the thread whose read is making Chroma load the index
        self._loaded = False                 # a read of Chroma's has returned: its index is in memory
        self._view: CopyView | None = None   # the copy as mapped while the index loads

    def forget(self) -> None:
        """Drop the cached count and dimension: the collection's vectors changed (Collection calls this when
        its generation moved on, which covers writes by other processes)."""
        self._count = None
        self._dimension = None
        self._view = None

    def hnsw(self) -> dict[str, Any]:
        """The collection's HNSW configuration as Chroma holds it (space, ef_search, max_neighbors, ...)."""
        return dict((self.collection.configuration_json or {}).get("hnsw") or {})

    def add(self, chunks: Sequence[Chunk], embeddings: Sequence[Any]) -> None:
        """Store the chunks' vectors with their ids and files only (no text, no other metadata).

        Upsert: an id already present is replaced, never duplicated (Chroma's add would ignore it), and
        deleted first, so a row of the older layout leaves its text behind with it. The search breadth is
        set to `hnsw_ef` first when the collection holds another (a write: under the exclusive lock, so no
        reader of an embedded store sees it half done)."""
        self.add_rows([c.id for c in chunks], [c.meta.source for c in chunks], embeddings)

    def add_rows(self, ids: Sequence[str], sources: Sequence[str], embeddings: Any) -> None:
        """`add` of chunks given as their ids and files (what a VectorProcess is sent)."""
        if not ids:
            return
        if self.hnsw().get("ef_search") != self.hnsw_ef:
            self.collection.modify(configuration={"hnsw": {"ef_search": self.hnsw_ef}})
        import numpy as np

        step = self._batch()
        copy_clean = self._copy.begin() if self._copy is not None else False
        # Only the ids already present are deleted: a delete of ids Chroma does not hold costs more than the get
        # that finds them (24,576 new vectors added in pages of 4,096 after each: 0.87x the wall time)
        present = [i for start in range(0, len(ids), step)
                   for i in self.collection.get(ids=list(ids[start:start + step]), include=[])["ids"]]
        self._delete(present)
        self.forget()
        vectors = np.asarray(embeddings, dtype=np.float32)
        for start in range(0, len(ids), step):
            self.collection.add(ids=list(ids[start:start + step]), embeddings=vectors[start:start + step],
                                metadatas=[{"source": s} for s in sources[start:start + step]])
        if self._copy is not None:
            if copy_clean:
                self._copy.put(ids, vectors)
            self._end_copy(copy_clean)

    def drop(self) -> None:
        """Delete the whole Chroma collection (every vector of this model, and its dimension), and its copy."""
        self.client.delete_collection(self.collection.name)
        if self._copy is not None:
            self._copy.delete()

    def delete_ids(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        copy_clean = self._copy.begin() if self._copy is not None else False
        self._delete(ids)
        if self._copy is not None:
            if copy_clean:
                self._copy.remove(ids)
            self._end_copy(copy_clean)

    def _delete(self, ids: Sequence[str]) -> None:
        self.forget()
        step = self._batch()
        for start in range(0, len(ids), step):
            self.collection.delete(ids=list(ids[start:start + step]))

    def _batch(self) -> int:
        """The most ids one Chroma call may carry (chromadb's max batch size)."""
        return max(1, int(self.client.get_max_batch_size()))

    def _end_copy(self, clean: bool) -> None:
        """Mark the copy clean after a write it followed; one that was not clean before it (missing, or left by
        a write cut short) is first made again from what Chroma holds now."""
        assert self._copy is not None
        if not clean:
            dim = self.dimension()
            if dim is None:
                self._copy.delete()
                return
            ids = sorted(self.ids())
            step = self._batch()
            self._copy.rebuild(dim, self._pages(ids, step))
        self._copy.commit()

    def _pages(self, ids: Sequence[str], step: int) -> Iterator[tuple[list[str], Any]]:
        import numpy as np

        for start in range(0, len(ids), step):
            got = self.collection.get(ids=list(ids[start:start + step]), include=["embeddings"])
            if got["ids"]:
                yield list(got["ids"]), np.asarray(got["embeddings"], dtype=np.float32)

    def ids(self) -> set[str]:
        out: set[str] = set()
        page = 10_000
        offset = 0
        while True:
            got = self.collection.get(include=[], limit=page, offset=offset)["ids"]
            out.update(got)
            if len(got) < page:
                return out
            offset += page

    def vectors(self, ids: Sequence[str]) -> dict[str, Any]:
        """{id: vector (a float32 numpy array, as Chroma returns it)} of those of these ids the index holds."""
        out: dict[str, Any] = {}
        step = self._batch()
        for start in range(0, len(ids), step):
            got = self.collection.get(ids=list(ids[start:start + step]), include=["embeddings"])
            embeddings = got["embeddings"]
            if embeddings is not None:
                out.update(zip(got["ids"], embeddings, strict=True))
        return out

    def count(self) -> int:
        if self._count is None:
            if (view := self._early()) is not None:
                return view.count
            # The collection's first read makes Chroma load its HNSW index (2.4 s at 1M vectors). chromadb 1.5's
            # get lets other Python threads run meanwhile and its count does not, so the load goes through a get
            # (dimension): through count it froze the TUI's event loop, and any import, for the whole load.
            self.dimension()
            self._count = int(self.collection.count())
        return self._count

    def dimension(self) -> int | None:
        """The dimension of the stored vectors (None while the index is empty)."""
        if self._dimension is None:
            if (view := self._early()) is not None:
                return view.dim
            with self._loading:
                got = self.collection.get(limit=1, include=["embeddings"])["embeddings"]
                self._dimension = (len(got[0]) if got is not None and len(got) else None,)
                self._loaded = True
        return self._dimension[0]

    def _early(self) -> CopyView | None:
        """The clean copy while another thread is loading Chroma's index (its first read); None otherwise: once
        it is loaded, with no copy, or when no load is under way (the caller's own read then loads it)."""
        if self._copy is None or self._loaded or not self._loading.locked():
            return None
        if self._view is None:
            self._view = self._copy.view()
        return self._view

    def query(self, embedding: Sequence[float], top_k: int, *, sources: Sequence[str] | None = None,
              ids: Collection[str] | None = None) -> list[tuple[str, float]]:
        """The ids of the top_k nearest chunks with their cosine similarity, best first; only among these chunk
        ids when given, else only among the chunks of these files when given (Chroma filters before it ranks).
        Only ids and distances are read, whatever else a collection of the older layout holds. While another
        thread loads Chroma's index, an unfiltered search scans the copy instead (`_early`)."""
        if top_k <= 0 or self.count() == 0 or (ids is not None and not ids) or (sources is not None and not sources):
            return []
        if ids is None and sources is None and (view := self._early()) is not None:
            return _ranked(view.search(embedding, top_k))
        within: dict[str, Any] = {}
        if ids is not None:
            within["ids"] = sorted(ids)
        elif sources is not None:
            within["where"] = {"source": {"$in": list(sources)}}
        result = self.collection.query(query_embeddings=[list(embedding)], n_results=top_k, include=["distances"],
                                       **within)
        found, distances = result["ids"][0], (result["distances"] or [[]])[0]
        return _ranked([(cid, 1.0 - float(d)) for cid, d in zip(found, distances, strict=True)])


def _ranked(hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Hits best first, equal scores by chunk id: HNSW returns ties in whatever order its graph walk met them and
    the copy in row order, and without one rule the same question ranked tied chunks one way while Chroma loaded
    and the other way after. Scores count as equal to six places, below which float32 sums differ with the order
    a BLAS or SIMD kernel adds in (a few units in the last place)."""
    return sorted(hits, key=lambda hit: (-round(hit[1], 6), hit[0]))
