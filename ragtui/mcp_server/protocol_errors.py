"""The replies JSON-RPC 2.0 asks for when a line is not a request: -32700 (parse error) for text that is not JSON
(invalid UTF-8 included, or nested deeper than the parser follows), -32600 (invalid request) for JSON that is
not one JSON-RPC message (a batch array, a bare value, an object without `jsonrpc` or `method`), with the id
when one can be read and null otherwise (https://www.jsonrpc.org/specification, section 5.1).

The SDK's stdio transport parses each line and hands a line it cannot parse to the server as an exception,
which the server drops without a reply, so a client waits forever for an answer. `Answering` is the read
stream the server is given instead: it passes messages on, and answers each such exception itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self

from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError


def error_reply(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error answering a line that failed to parse as a message with `exc`."""
    errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else []
    if not errors or any(e["type"] == "json_invalid" for e in errors):
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error: not JSON"))
    return JSONRPCError(jsonrpc="2.0", id=_request_id(errors), error=ErrorData(code=INVALID_REQUEST, message=(
        "Invalid Request: not one JSON-RPC 2.0 request, notification or response (a batch is not supported)")))


def _request_id(errors: list[Any]) -> str | int | None:
    """The id of the object the line held, when it is a string or an integer."""
    for error in errors:
        found = error.get("input")
        if isinstance(found, dict):
            value = found.get("id")
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                return value
    return None


class Answering:
    """`inner` without its exceptions: each is answered on `replies` with `error_reply` instead."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], replies: WriteStream[SessionMessage]) -> None:
        self._inner = inner
        self._replies = replies

    @property
    def last_context(self) -> Any:
        """The context the SDK's stream carried with its last item (the SDK reads it with getattr)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        return await self._next_message(self._inner.receive)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        return await self._next_message(self._inner.__anext__)

    async def _next_message(self, fetch: Callable[[], Awaitable[SessionMessage | Exception]]) -> SessionMessage:
        """The next message `fetch` gives, each line the transport could not parse answered with its error on the
        way (the end of the stream passes through as `fetch` raises it)."""
        while True:
            item = await fetch()
            if not isinstance(item, Exception):
                return item
            await self._replies.send(SessionMessage(error_reply(item)))

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None,
                        exc_tb: TracebackType | None) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc_val, exc_tb)
