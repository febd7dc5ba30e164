"""The embedding client for `embed.provider`: Ollama's (LlamaIndex's OllamaEmbedding, `ollama_api.ollama_embedding`)
or an OpenAI-compatible server's `/v1/embeddings` (llama.cpp's server, vLLM, LM Studio), a small client here.

Both answer the same calls, those of LlamaIndex's embedding classes that ragtui uses: `aget_general_text_embeddings`
(the ingest's batches), `aget_text_embedding_batch` (eval), `aget_query_embedding` and `get_text_embedding_batch`
(a query and its synonyms' senses). The ingest and the query ask the same server, so a collection is never
searched with vectors of another model than it was embedded with.

OpenAI's embeddings API: https://platform.openai.com/docs/api-reference/embeddings/create (a request holds a
list of texts, the reply one `{"embedding": [...], "index": i}` per text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from ragtui.errors import RagtuiError
from ragtui.server_limits import async_client, loads, sync_client

if TYPE_CHECKING:
    from llama_index.embeddings.ollama import OllamaEmbedding

    from ragtui.config import Settings
    from ragtui.config_sections import Secret


class EmbedServerError(RagtuiError):
    """The embedding server answered with an HTTP error status; `status_code` says which."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


def embedding_client(settings: Settings, model: str, *,
                     workers: int | None = None) -> OllamaEmbedding | OpenAICompatibleEmbedding:
    """The client that embeds with `model` for embed.provider."""
    if settings.embed.provider == "openai":
        url, key = settings.embed_server
        return OpenAICompatibleEmbedding(base_url=url, api_key=key, model=model, batch_size=settings.embed.batch_size,
                                         timeout=settings.embed.timeout, max_bytes=settings.limits.max_reply_bytes)
    from ragtui.ollama_api import ollama_embedding

    return ollama_embedding(settings, model, workers=workers)


def embed_url(settings: Settings) -> str:
    """The URL of the server that embeds: ollama.host, or the OpenAI-compatible server's /v1 root."""
    return settings.embed_server[0] if settings.embed.provider == "openai" else settings.ollama.host


def embed_server_name(settings: Settings) -> str:
    """Where embeddings come from, in the words of a message: "Ollama at URL" or "the embedding server at URL"."""
    if settings.embed.provider == "openai":
        return f"the embedding server at {embed_url(settings)}"
    return f"Ollama at {embed_url(settings)}"


class OpenAICompatibleEmbedding:
    """`model` at an OpenAI-compatible server's `base_url` (its /v1 root). Each reply is held to `max_bytes` and,
    whole, to `timeout` seconds (server_limits.BoundedTransport); proxies from the environment are not used.
    A reply that is not one list of numbers per text raises ValueError (a per-token list of vectors, which a
    server sends for a model it does not pool, is named as such); an HTTP error status raises EmbedServerError."""

    def __init__(self, *, base_url: str, api_key: Secret, model: str, batch_size: int, timeout: float,
                 max_bytes: int) -> None:
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._key = api_key

    def _request(self, texts: list[str]) -> dict[str, Any]:
        return {"url": self.url, "headers": self._key.bearer(),
                "json": {"model": self.model, "input": texts, "encoding_format": "float"}}

    async def aget_general_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order, from one request."""
        async with async_client(timeout=self.timeout, max_bytes=self.max_bytes, deadline_s=self.timeout,
                                deadline_key="embed.timeout") as client:
            response = await client.post(**self._request(texts))
        return self._vectors(response, len(texts))

    def get_general_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        with sync_client(timeout=self.timeout, max_bytes=self.max_bytes, deadline_key="embed.timeout") as client:
            response = client.post(**self._request(texts))
        return self._vectors(response, len(texts))

    async def aget_query_embedding(self, query: str) -> list[float]:
        return (await self.aget_general_text_embeddings([query]))[0]

    async def aget_text_embedding_batch(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors += await self.aget_general_text_embeddings(texts[start:start + self.batch_size])
        return vectors

    def get_text_embedding_batch(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors += self.get_general_text_embeddings(texts[start:start + self.batch_size])
        return vectors

    def _vectors(self, response: httpx.Response, count: int) -> list[list[float]]:
        """The reply's vectors in the order of the texts sent (the server says each one's `index`); the numbers
        themselves are checked by the caller (stores.vector.check_vectors)."""
        if response.status_code != 200:
            raise EmbedServerError(f"HTTP {response.status_code}: {_error_text(response, self.url)}",
                                  response.status_code)
        body = loads(response.content, self.url)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
            raise ValueError("the reply has no list of embeddings under \"data\"")
        if len(data) != count:
            raise ValueError(f"{len(data)} embeddings for {count} texts")
        indices = [d.get("index", i) for i, d in enumerate(data)]
        if sorted(indices) != list(range(count)):
            raise ValueError("the embeddings' indices are not one per text sent")
        ordered = [d.get("embedding") for _, d in sorted(zip(indices, data, strict=True), key=lambda p: p[0])]
        for vector in ordered:
            if isinstance(vector, list) and vector and all(isinstance(v, list) for v in vector):
                raise ValueError(f"one vector per token ({len(vector)} for one text) instead of one per text: the "
                                 "server does not pool this model's embeddings; serve an embedding model")
        return ordered   # the numbers are checked by the caller


def _error_text(response: httpx.Response, url: str) -> str:
    """The server's own error message (OpenAI's {"error": {"message": ...}}), else the reply's start, one line."""
    try:
        body = loads(response.content, url)
        error = body.get("error") if isinstance(body, dict) else None
        text = str(error.get("message") if isinstance(error, dict) else error or body.get("detail") or body)
    except (ValueError, AttributeError, RagtuiError):
        text = response.content[:200].decode("utf-8", "replace")
    lines = text.strip().splitlines()
    return lines[0][:200] if lines else "no message"
