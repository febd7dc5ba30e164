"""Embedding chunks (through Ollama, or an OpenAI-compatible server: `ragtui.embed_api`): batches, retries,
long-chunk averaging.

The text embedded may carry a contextual prefix ("path > heading\\n", after Anthropic's
"Contextual Retrieval", 2024: a chunk embedded with where it comes from); the text
stored never does. A text longer than the model's window is embedded in
overlapping parts whose vectors are averaged: the window is the
model's context length from Ollama's /api/show, in characters by the project's one
token estimate (`ragtui.tokens`), so nothing past it is silently truncated by the
server; a fixed 30,000 chars when the model does not say (an OpenAI-compatible
server never does). Every
stored vector is L2-normalised.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from typing import Any

from ragtui.config import Settings
from ragtui.errors import RagtuiError, describe
from ragtui.model.chunks import Chunk
from ragtui.tokens import CHARS_PER_TOKEN

LONG_CHUNK_CHARS = 30_000    # the part size for a model whose context length /api/show does not give
LONG_CHUNK_OVERLAP = 200     # chars shared by neighbouring parts (at most a quarter of a part)
DIMENSION_PROBE = "dimension probe"   # embedded once when /api/show does not give a model's dimension


class ModelMissing(RagtuiError):
    """The server does not have the model; the message carries the hint (`ollama pull`, or the server's models)."""


class EmbedUnavailable(RagtuiError):
    """The embedding server did not answer (down, timing out, failing) after every retry."""


class EmbedInvalid(EmbedUnavailable):
    """The embedding server answered a batch with something that is not usable vectors (malformed JSON, nulls, strings,
    NaN, zeros, the wrong count or dimension). Not retried; nothing of the batch is stored, so the chunks
    stay pending and the collection resumable ("needs embeddings")."""


class DimensionMismatch(EmbedInvalid):
    """The collection's index holds vectors of another dimension than the model gives: they can never be
    compared, so nothing is embedded until the index is re-embedded."""


def split_long(text: str, limit: int = LONG_CHUNK_CHARS, overlap: int = LONG_CHUNK_OVERLAP) -> list[str]:
    """Parts of at most `limit` chars, each overlapping its neighbour by `overlap`."""
    if len(text) <= limit:
        return [text]
    parts, start = [], 0
    while True:
        parts.append(text[start:start + limit])
        if start + limit >= len(text):
            return parts
        start += limit - overlap


def part_chars(context_tokens: int | None) -> int:
    """The longest text embedded whole by a model of this context length: tokens x CHARS_PER_TOKEN."""
    return int(context_tokens * CHARS_PER_TOKEN) if context_tokens else LONG_CHUNK_CHARS


def l2_normalize(vector: Sequence[float]) -> list[float]:
    """v / ||v||2; a zero vector stays zero."""
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else list(vector)


def mean_normalized(vectors: Sequence[Sequence[float]]) -> list[float]:
    """(v1 + ... + vN) / N, then L2-normalised: one vector for a text embedded in parts."""
    n = len(vectors)
    return l2_normalize([sum(col) / n for col in zip(*vectors, strict=True)])


def embed_input(chunk: Chunk, contextual: bool) -> str:
    """What is sent to the model: the contextual prefix "path > heading\\n" + text, or the bare text."""
    if not contextual:
        return chunk.text
    where = f"{chunk.meta.source} > {chunk.meta.heading}" if chunk.meta.heading else chunk.meta.source
    return f"{where}\n{chunk.text}"


class Embedder:
    """One embedding model (embed.provider's server) with ragtui's batching, retry and averaging rules."""

    def __init__(self, settings: Settings, model: str) -> None:
        from ragtui.embed_api import embed_server_name, embed_url, embedding_client

        self.model = model
        self.openai = settings.embed.provider == "openai"
        self.batch_size = settings.embed.batch_size
        self.backoff = settings.embed.backoff
        self.contextual = settings.embed.contextual_prefix
        self.host = settings.ollama.host
        self.where = embed_url(settings)          # the server, for the messages
        self.server = embed_server_name(settings)
        self.deadline_s = settings.ollama.timeout
        self.max_reply_bytes = settings.limits.max_reply_bytes
        # The dimension every vector must have (`expect`, from the model and the collection's index), else the
        # first valid batch's, so a model cannot switch dimensions between batches either.
        self.dimension: int | None = None
        self.dimension_from = "the collection's index"   # whose dimension it is, for the error message
        self.context_tokens: int | None = None   # from /api/show, read before the first batch
        self.model_dimension: int | None = None  # "*.embedding_length" from /api/show
        self.part_chars: int | None = None
        self.split = 0                           # chunks embedded as several averaged parts
        self._client = embedding_client(settings, model)

    async def window(self) -> int:
        """The part size in chars, from the model's context length (asked once; 30,000 when unknown)."""
        await self._show()
        assert self.part_chars is not None
        return self.part_chars

    async def _show(self) -> None:
        """The model's context length and dimension from Ollama's /api/show, asked once (an OpenAI-compatible
        server has no such call: both stay unknown)."""
        from ragtui.ollama_api import ashow, context_length_of, embedding_length_of

        if self.part_chars is None and self.openai:
            self.part_chars = part_chars(None)
        if self.part_chars is None:
            show = await ashow(self.host, self.model, self.max_reply_bytes, self.deadline_s, self.backoff)
            self.context_tokens = context_length_of(show)
            self.model_dimension = embedding_length_of(show)
            self.part_chars = part_chars(self.context_tokens)

    async def expect(self, index_dimension: int | None) -> None:
        """Fix the dimension every vector must have before the first batch: the model's own (Ollama's /api/show
        "*.embedding_length", else one probe embedding, checked like every answer), which the collection's
        index, when it holds vectors, must share (EmbedInvalid otherwise: they can never be compared)."""
        await self._show()
        model = self.model_dimension
        if model is None:
            model = len((await self._batch([DIMENSION_PROBE]))[0])
        if index_dimension is not None and index_dimension != model:
            raise DimensionMismatch(f"the collection's {self.model!r} index holds {index_dimension}-dimension "
                                    f"vectors but {self.model!r} at {self.where} gives {model}; nothing was embedded")
        self.dimension = model
        self.dimension_from = ("the collection's index" if index_dimension is not None
                               else f"model {self.model!r}")

    async def embed_chunks(self, chunks: Sequence[Chunk],
                           done: Callable[[int], None] | None = None) -> list[list[float]]:
        """One unit vector per chunk, in order; after each /api/embed call, `done(n)`: the first n chunks have
        all their vectors (so progress moves with each call, not with each page of calls)."""
        texts = [embed_input(c, self.contextual) for c in chunks]
        limit = await self.window()
        parts: list[str] = []
        owners: list[int] = []
        for i, text in enumerate(texts):
            for part in split_long(text, limit, min(LONG_CHUNK_OVERLAP, limit // 4)):
                parts.append(part)
                owners.append(i)
        vectors: list[list[float]] = []
        for start in range(0, len(parts), self.batch_size):
            vectors.extend(await self._batch(parts[start:start + self.batch_size]))
            if done is not None:
                done(owners[len(vectors)] if len(vectors) < len(owners) else len(texts))
        grouped: list[list[list[float]]] = [[] for _ in texts]
        for owner, vector in zip(owners, vectors, strict=True):
            grouped[owner].append(vector)
        self.split += sum(len(g) > 1 for g in grouped)
        return [mean_normalized(g) for g in grouped]

    async def _batch(self, texts: list[str]) -> list[list[float]]:
        """One /api/embed (or /v1/embeddings) call, retried with exponential backoff; a missing model or an
        unusable answer is not retried. The whole answer must arrive within ollama.timeout (embed.timeout) and
        limits.max_reply_mb (the client's transport, ragtui.server_limits, holds it to both)."""
        import httpx
        from ollama import ResponseError

        from ragtui.embed_api import EmbedServerError
        from ragtui.server_limits import ReplyLimit, ReplyTooSlow, too_deep
        from ragtui.stores.vector import BadVectors, check_vectors

        last: Exception | None = None
        for attempt in range(self.backoff.attempts):
            if attempt:
                await asyncio.sleep(self.backoff.pause(attempt))
            try:
                vectors: Any = await self._client.aget_general_text_embeddings(texts)
            except EmbedServerError as exc:
                if exc.status_code == 404:
                    raise ModelMissing(f"embedding model {self.model!r} is not served by {self.server} ({exc}); "
                                       "check [embed] model against the server's /v1/models") from None
                last = exc
            except ResponseError as exc:
                if exc.status_code == 404 or "not found" in str(exc.error).lower():
                    raise ModelMissing(f"embedding model {self.model!r} is not available in Ollama; "
                                       f"run `ollama pull {self.model}`") from None
                last = exc
            except (ReplyTooSlow, ConnectionError, httpx.HTTPError, OSError) as exc:
                last = exc
            except ReplyLimit as exc:                 # too big: asking again would only fetch it again
                raise self._invalid(str(exc)) from None
            except RecursionError:                    # the client's JSON parser on a deeply nested answer
                raise self._invalid(str(too_deep(self.where))) from None
            except (ValueError, TypeError, KeyError, AttributeError) as exc:   # non-JSON, truncated, wrong shape
                raise self._invalid(f"malformed response ({type(exc).__name__}: {_first_line(str(exc))})") from None
            else:
                try:
                    checked = check_vectors(vectors, len(texts), self.dimension, self.dimension_from)
                except BadVectors as exc:
                    raise self._invalid(str(exc)) from None
                self.dimension = self.dimension or len(checked[0])
                return checked
        raise EmbedUnavailable(f"embedding with {self.model!r} at {self.where} failed after {self.backoff.attempts} "
                               f"attempts: {_first_line(describe(last)) if last else 'no answer'}")

    def _invalid(self, why: str) -> EmbedInvalid:
        return EmbedInvalid(f"embedding model {self.model!r} at {self.where} returned an unusable batch: {why}; "
                            "nothing of it was stored")


def _first_line(text: str, limit: int = 200) -> str:
    """One line of at most `limit` chars: a pydantic or JSON error can run to dozens of lines."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."
