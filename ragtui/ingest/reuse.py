"""Vectors reused instead of embedded again: a chunk whose heading and text (`Chunk.vector_key`) already have a
vector from the same model takes it.

Two places hold such vectors during an ingest. The vectors of chunks leaving the
collection in this run (a file changed, or gone with --sync: moved or renamed)
are kept here, up to SPARE_BYTES, before their ids leave Chroma (a changed file's
chunks keep their ids, source and position, for other text). And a chunk stored
elsewhere in the collection lends its vector, found by its key in the records.
So a one-paragraph edit embeds only the chunks whose text changed, a renamed
file nothing, an edited copy beside the original only its changes.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from ragtui.library import Collection
from ragtui.model.chunks import Chunk

SPARE_BYTES = 128 * 2**20    # vectors of chunks that left the collection, kept for the rest of the run


class VectorReuse:
    """One ingest run's vectors to reuse. `stores_lock` is the run's lock ordering journal and vector writes."""

    def __init__(self, collection: Collection, stores_lock: threading.Lock) -> None:
        self.coll = collection
        self._stores_lock = stores_lock
        self._spare: dict[tuple[str, bytes], Any] = {}
        self._spare_bytes = 0

    def keep(self, model: str, chunks: Sequence[Chunk]) -> None:
        """Keep the stored `model` vectors of these chunks, about to leave the collection, for the rest of the
        run (inside `vector_access`; up to SPARE_BYTES in all)."""
        chosen = [c for c in chunks if (model, c.vector_key) not in self._spare]
        if not chosen or self._spare_bytes >= SPARE_BYTES:
            return
        stored = self.coll.vectors(model).vectors([c.id for c in chosen])
        for c in chosen:
            if (vector := stored.get(c.id)) is not None and self._spare_bytes < SPARE_BYTES:
                self._spare[(model, c.vector_key)] = vector
                self._spare_bytes += vector.nbytes

    def found(self, model: str, chunks: Sequence[Chunk]) -> dict[str, Any]:
        """{chunk id: vector} for the chunks whose key already has a `model` vector: one kept from a chunk that
        left the collection this run, else one stored for another chunk of the collection (read from the index
        under the run's stores lock, so the chunk it belongs to cannot be journaled again meanwhile)."""
        out: dict[str, Any] = {}
        for c in chunks:
            if (vector := self._spare.get((model, c.vector_key))) is not None:
                out[c.id] = vector
        rest = [c for c in chunks if c.id not in out]
        keys = {c.vector_key for c in rest}
        # A first look without the lock: most pages of a first ingest have no key stored yet, and such a page
        # need not wait for the vector write the lock covers (so it is embedded while the previous one is
        # written, and the held vectors grow into fewer, larger writes). A key stored meanwhile only costs one
        # vector embedded again.
        if not rest or not self.coll.records.embedded_with_keys(model, keys):
            return out
        with self._stores_lock:
            owners = self.coll.records.embedded_with_keys(model, keys)
            if not owners:
                return out
            with self.coll.vector_access():
                stored = self.coll.vectors(model).vectors(sorted(set(owners.values())))
        for c in rest:
            if (owner := owners.get(c.vector_key)) is not None and owner in stored:
                out[c.id] = stored[owner]
        return out
