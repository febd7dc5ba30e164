"""The limits on what a server may send: every reply from Ollama (chat, embed, /api/show, /api/tags), an
OpenAI-compatible server and a reranker passes through here.

- A byte cap on each reply (`limits.max_reply_mb`) and a deadline for the whole reply (connection, headers
  and every byte of the body), both enforced by `BoundedTransport`, the httpx transport under every HTTP
  client ragtui builds or hands to a library (the `ollama` and `openai` packages read their streams
  through it). httpx's own timeout is per read, so a server dripping a byte at a time never trips it.
  Replies are asked for uncompressed and a compressed one is refused, so the cap counts the bytes that
  are parsed (a small gzip body can inflate to gigabytes).
- A token cap on a streamed answer (`AnswerCap`): a server that ignores max_tokens is cut at about it.
- JSON nested deeper than the parser's recursion limit is one error (`too_deep`), not RecursionError.

Each limit that trips raises a `ReplyLimit` (a RagtuiError) whose message names the server and the
setting to change.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from ragtui.errors import RagtuiError
from ragtui.tokens import CHARS_PER_TOKEN

MIB = 2**20
# An answer's text may reach this many times max_tokens by the token estimate before it is cut: the estimate
# (characters / 3.5) overcounts text of long tokens (code, tables), and a server that honours max_tokens must
# never be cut here; its streamed pieces (one or more tokens each) are counted against max_tokens exactly.
ESTIMATE_SLACK = 2


class ReplyLimit(RagtuiError):
    """A server's reply went past a limit; the message names the server and the setting."""


class ReplyTooLarge(ReplyLimit):
    """More bytes than limits.max_reply_mb, or a compressed reply."""


class ReplyTooSlow(ReplyLimit):
    """The whole reply did not arrive within its deadline."""


class ReplyTooDeep(ReplyLimit):
    """JSON nested deeper than the parser can follow."""


def too_deep(where: str) -> ReplyTooDeep:
    return ReplyTooDeep(f"{where} sent JSON nested too deep to parse; the reply was refused")


def loads(data: str | bytes, where: str) -> Any:
    """json.loads that turns the parser's RecursionError (deeply nested arrays or objects) into ReplyTooDeep;
    ValueError for anything that is not JSON, as json.loads."""
    try:
        return json.loads(data)
    except RecursionError:
        raise too_deep(where) from None


class BoundedTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An httpx transport (for a sync or an async client, or both: the `ollama` package hands the same keyword
    arguments to its two clients) that cuts every reply at `max_bytes` and `deadline_s`.

    `deadline_key` names the setting that gives the deadline, for the error. The async deadline is exact (each
    read is awaited under what is left of it); a sync read blocks, so there the deadline is checked between
    reads and a stalled read ends at the client's own per-read timeout.
    """

    def __init__(self, *, max_bytes: int, deadline_s: float, deadline_key: str) -> None:
        self.max_bytes = max_bytes
        self.deadline_s = deadline_s
        self.deadline_key = deadline_key
        self._sync: httpx.HTTPTransport | None = None
        self._async: httpx.AsyncHTTPTransport | None = None

    # --- the errors ---------------------------------------------------------------------------------------

    def too_large(self, request: httpx.Request, size: int | None = None) -> ReplyTooLarge:
        said = f" ({size / MIB:.1f} MiB)" if size is not None else ""
        return ReplyTooLarge(f"{_where(request)} sent a reply larger than {self.max_bytes / MIB:g} MiB{said}; it "
                             "was cut off (limits.max_reply_mb)")

    def too_slow(self, request: httpx.Request) -> ReplyTooSlow:
        return ReplyTooSlow(f"{_where(request)} did not finish its reply within {self.deadline_s:g} s; it was "
                            f"cut off ({self.deadline_key})")

    def _checked(self, request: httpx.Request, response: httpx.Response) -> None:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ReplyTooLarge(f"{_where(request)} sent a {encoding}-compressed reply, which was not asked for "
                                "and cannot be size-checked; it was refused")
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            raise self.too_large(request, int(length))

    @staticmethod
    def _uncompressed(request: httpx.Request) -> None:
        request.headers["Accept-Encoding"] = "identity"

    # --- sync ---------------------------------------------------------------------------------------------

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self._sync = self._sync or httpx.HTTPTransport(trust_env=False)
        ends = time.monotonic() + self.deadline_s
        self._uncompressed(request)
        response = self._sync.handle_request(request)
        try:
            if time.monotonic() > ends:
                raise self.too_slow(request)
            self._checked(request, response)
        except ReplyLimit:
            response.close()
            raise
        return httpx.Response(status_code=response.status_code, headers=response.headers,
                              stream=_SyncBounded(self, request, response, ends), extensions=response.extensions)

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()

    # --- async --------------------------------------------------------------------------------------------

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self._async = self._async or httpx.AsyncHTTPTransport(trust_env=False)
        ends = asyncio.get_running_loop().time() + self.deadline_s
        self._uncompressed(request)
        try:
            async with asyncio.timeout_at(ends):
                response = await self._async.handle_async_request(request)
        except TimeoutError:
            raise self.too_slow(request) from None
        try:
            self._checked(request, response)
        except ReplyLimit:
            await response.aclose()
            raise
        return httpx.Response(status_code=response.status_code, headers=response.headers,
                              stream=_AsyncBounded(self, request, response, ends), extensions=response.extensions)

    async def aclose(self) -> None:
        if self._async is not None:
            await self._async.aclose()


def sync_client(*, timeout: float, max_bytes: int, deadline_key: str) -> httpx.Client:
    """An httpx client whose whole reply must come within `timeout` seconds and `max_bytes`; no proxies."""
    return httpx.Client(timeout=timeout, trust_env=False,
                        transport=BoundedTransport(max_bytes=max_bytes, deadline_s=timeout, deadline_key=deadline_key))


def async_client(*, timeout: float, max_bytes: int, deadline_s: float, deadline_key: str) -> httpx.AsyncClient:
    """An httpx async client: `timeout` per read (httpx's), `deadline_s` for the whole reply, at most
    `max_bytes`; no proxies."""
    return httpx.AsyncClient(timeout=timeout, trust_env=False, transport=BoundedTransport(
        max_bytes=max_bytes, deadline_s=deadline_s, deadline_key=deadline_key))


class _SyncBounded(httpx.SyncByteStream):
    def __init__(self, limits: BoundedTransport, request: httpx.Request, response: httpx.Response,
                 ends: float) -> None:
        self._limits, self._request, self._response, self._ends = limits, request, response, ends

    def __iter__(self) -> Iterator[bytes]:
        total = 0
        for part in self._response.stream:     # type: ignore[union-attr]  # a sync transport's stream
            total += len(part)
            if total > self._limits.max_bytes:
                raise self._limits.too_large(self._request)
            if time.monotonic() > self._ends:
                raise self._limits.too_slow(self._request)
            yield part

    def close(self) -> None:
        self._response.close()


class _AsyncBounded(httpx.AsyncByteStream):
    def __init__(self, limits: BoundedTransport, request: httpx.Request, response: httpx.Response,
                 ends: float) -> None:
        self._limits, self._request, self._response, self._ends = limits, request, response, ends

    async def __aiter__(self) -> AsyncIterator[bytes]:
        parts = self._response.stream.__aiter__()   # type: ignore[union-attr]  # an async transport's stream
        total = 0
        while True:
            try:
                async with asyncio.timeout_at(self._ends):
                    part = await anext(parts)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise self._limits.too_slow(self._request) from None
            total += len(part)
            if total > self._limits.max_bytes:
                raise self._limits.too_large(self._request)
            yield part

    async def aclose(self) -> None:
        await self._response.aclose()


def _where(request: httpx.Request) -> str:
    """The server and path a reply came from, as `http://host:port/path` (no query string: it may hold a key)."""
    url = request.url
    return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}{url.path}"


class AnswerCap:
    """Counts a streamed answer against max_tokens. A server may send at most max_tokens pieces (each holds
    at least one token, so one that honours max_tokens never trips this) and text of at most ESTIMATE_SLACK x
    max_tokens by the project's token estimate (which bounds a server sending a few huge pieces)."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.max_chars = int(ESTIMATE_SLACK * max_tokens * CHARS_PER_TOKEN)
        self.pieces = 0
        self.chars = 0

    def take(self, text: str) -> tuple[str, bool]:
        """The part of the next piece within the cap, and whether the cap is reached (the answer stops)."""
        if not text:
            return text, False
        self.pieces += 1
        if self.pieces > self.max_tokens:
            return "", True
        room = self.max_chars - self.chars
        self.chars += len(text)
        return text[:room], len(text) > room
