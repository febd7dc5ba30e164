"""The query embeddings a process has asked for, kept for the questions it asks again.

A long-lived process embeds the same query text again whenever a question is asked
again: in the TUI, by an MCP client, in a follow-up that repeats an earlier one. The
seeds' design keeps a bounded LRU of query embeddings for
this (500 entries and 10 minutes there); here the last QUERY_VECTORS (server, model,
text) triples for QUERY_TTL_S each (a model pulled again under the same name is asked
again after that), each vector an array of doubles (3 KiB at 384 dimensions, 8 KiB at
1,024). Only vectors that passed `stores.vector.check_vectors` are kept, and a
failure is never cached, so a server that comes back is asked again.
"""

from __future__ import annotations

import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Sequence

QUERY_VECTORS = 512
QUERY_TTL_S = 600.0

_Key = tuple[str, str, str]


class QueryVectorCache:
    """A thread-safe LRU of query vectors by (embedding server, model, text)."""

    def __init__(self, size: int = QUERY_VECTORS) -> None:
        self.size = size
        self._vectors: OrderedDict[_Key, tuple[float, array[float]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, server: str, model: str, text: str) -> list[float] | None:
        with self._lock:
            kept = self._vectors.get((server, model, text))
            if kept is None or time.monotonic() - kept[0] > QUERY_TTL_S:
                return None
            self._vectors.move_to_end((server, model, text))
            return kept[1].tolist()

    def put(self, server: str, model: str, text: str, vector: Sequence[float]) -> None:
        with self._lock:
            self._vectors[(server, model, text)] = (time.monotonic(), array("d", vector))
            self._vectors.move_to_end((server, model, text))
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)


QUERY_CACHE = QueryVectorCache()
