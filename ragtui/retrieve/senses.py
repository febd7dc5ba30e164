"""WordNet sense choice (`synonyms.sense = "query"`): a word's synonyms from the sense closest to the whole query.

The default expands a word with its first synset, which is often the wrong sense
("bank" the slope beside a river in a question about loans; "run" a score in
baseball). Here every sense of a word (lemmas and gloss, `wordnet.Sense.text`)
is embedded with the model that embedded the query, and the sense with the
highest cosine to the query vector gives the synonyms. The senses not yet
embedded are sent in one batched call per query; their vectors stay in the
Workspace's `Lexicon.sense_vectors` (`SenseVectors`, bounded), so a word seen
before costs nothing. It runs only when the keyword leg's OR tier needs
synonyms, and only for words whose senses would add different synonyms.
Without a query vector (keyword mode, the embedder down), with
`synonyms.sense = "first"`, or when that call fails, the first synset is used.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Sense:
    """One synset of a word: its id, its other lemmas (the synonyms it would add) and the text that is
    compared with the query ("lemma, lemma: gloss")."""

    id: str
    synonyms: tuple[str, ...]
    text: str


class SenseSource(Protocol):
    """Where a word's senses come from (`wordnet.SynonymLookup`), in the lexicon's order, most frequent first."""

    def senses(self, word: str) -> tuple[Sense, ...]: ...


class Synonyms(Protocol):
    """What the keyword leg asks for: synonyms of these words (`SynonymLookup`: first synset;
    `QuerySynonyms`: the sense closest to the query)."""

    def for_words(self, words: Sequence[str]) -> dict[str, list[str]]: ...


SenseEmbedder = Callable[[list[str]], list[list[float]]]   # texts -> one vector each, same order (sync)
MAX_CACHED_SENSES = 50_000   # ~75 MB of float32 at 384 dimensions; the oldest go first beyond it


class SenseVectors:
    """Unit vectors of WordNet senses per (embedding model, synset id), oldest dropped beyond `limit`."""

    def __init__(self, limit: int = MAX_CACHED_SENSES) -> None:
        self.limit = limit
        self._vectors: dict[tuple[str, str], np.ndarray] = {}
        self._lock = threading.Lock()

    def get(self, model: str, sense_id: str) -> np.ndarray | None:
        with self._lock:
            return self._vectors.get((model, sense_id))

    def put(self, model: str, sense_id: str, vector: Sequence[float]) -> np.ndarray:
        """Stores the vector, normalised, and returns what was stored."""
        unit = _unit(vector)
        with self._lock:
            self._vectors[(model, sense_id)] = unit
            while len(self._vectors) > self.limit:
                del self._vectors[next(iter(self._vectors))]
        return unit


class QuerySynonyms:
    """One query's synonyms: for each word, the other lemmas of its sense closest to the query.

    Shared by the keyword legs of all collections of the query (threads): the
    first caller embeds the missing senses, the others find them cached. After the
    legs, `error` says why senses fell back to the first synset, if they did.
    """

    def __init__(self, lookup: SenseSource, *, model: str, query_vector: Sequence[float],
                 embed: SenseEmbedder, cache: SenseVectors) -> None:
        self.lookup = lookup
        self.model = model
        self.query = _unit(query_vector)
        self.embed = embed
        self.cache = cache
        self.error = ""
        self._lock = threading.Lock()

    def for_words(self, words: Sequence[str]) -> dict[str, list[str]]:
        senses = {w: self.lookup.senses(w) for w in words}
        with self._lock:
            vectors = self._vectors([s for group in senses.values() if _choice_matters(group) for s in group])
        return {w: list(self._closest(group, vectors).synonyms) if group else [] for w, group in senses.items()}

    def _vectors(self, senses: Sequence[Sense]) -> dict[str, np.ndarray]:
        """The senses' vectors, embedding the ones not cached in one call; only the cached ones when that call
        fails (or failed earlier in this query)."""
        out = {s.id: v for s in senses if (v := self.cache.get(self.model, s.id)) is not None}
        todo = list({s.id: s for s in senses if s.id not in out}.values())
        if not todo or self.error:     # after a failed call this query keeps to the first synsets
            return out
        try:
            fresh = self.embed([s.text for s in todo])
            if len(fresh) != len(todo):
                raise ValueError(f"{len(fresh)} vectors for {len(todo)} texts")
        except Exception as exc:   # any embedding failure means "first synset", said once in a notice
            self.error = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            return out
        for sense, vector in zip(todo, fresh, strict=True):
            out[sense.id] = self.cache.put(self.model, sense.id, vector)
        return out

    def _closest(self, group: Sequence[Sense], vectors: dict[str, np.ndarray]) -> Sense:
        """The sense with the highest cosine to the query; the first synset when any vector is missing."""
        if not _choice_matters(group) or any(s.id not in vectors for s in group):
            return group[0]
        scores = [float(vectors[s.id] @ self.query) for s in group]
        return group[scores.index(max(scores))]


def _choice_matters(group: Sequence[Sense]) -> bool:
    """Only a word whose senses would add different synonyms needs the embedding model (one whose every
    sense has no other lemma, or one sense only, does not)."""
    return len({s.synonyms for s in group}) > 1


def _unit(vector: Sequence[float]) -> np.ndarray:
    import numpy as np

    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v
