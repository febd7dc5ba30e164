"""What `ragtui serve` writes to its log: one line per event, never the token, never a request's bytes, and
never more than a quota of lines a minute, since anyone who can reach the port can make requests.

textual-serve's own logging shows rich tracebacks with their local variables (a malformed request's raw
bytes, a WebSocket message), and aiohttp's access log prints each request line, query string and token
included. Here every record becomes one line (an exception as its type and first line), the access log
names the path without its query, and past `QUOTA` lines in a minute the rest of that minute is dropped,
the drop said once.
"""

from __future__ import annotations

import logging
import sys
import time

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web import BaseRequest, StreamResponse

from ragtui.sanitize import one_line

QUOTA = 60              # lines a minute: a page load takes about ten, a flood is cut here
_WINDOW_S = 60.0
_SHOWN = 160            # at most this many characters of any one message
LOGGER = "ragtui.serve"


def shown(text: str) -> str:
    """Untrusted text made inert and short enough for one line."""
    text = one_line(text)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


class _Quota(logging.Filter):
    """At most QUOTA records per minute pass; the first one dropped in a minute is replaced by a line saying so."""

    def __init__(self) -> None:
        super().__init__()
        self._window = 0.0
        self._count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now - self._window >= _WINDOW_S:
            self._window, self._count = now, 0
        self._count += 1
        if self._count <= QUOTA:
            return True
        if self._count == QUOTA + 1:
            record.msg, record.args, record.exc_info, record.exc_text = (
                f"more than {QUOTA} log lines this minute: the rest of the minute is not logged", None, None, None)
            return True
        return False


class _OneLine(logging.Formatter):
    """`ragtui serve: MESSAGE`, an exception as `(Type: first line)`, never its traceback or locals."""

    def format(self, record: logging.LogRecord) -> str:
        text = shown(record.getMessage())
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            first = str(error).splitlines()[0] if str(error) else ""
            text += f" ({type(error).__name__}{': ' + shown(first) if first else ''})"
        return f"ragtui serve: {text}"


def configure() -> logging.Logger:
    """Route every logger `serve` uses (its own, aiohttp's, textual-serve's) through one quota to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    handler.addFilter(_Quota())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    for name in (LOGGER, "aiohttp.access"):
        logging.getLogger(name).setLevel(logging.INFO)
    return logging.getLogger(LOGGER)


class AccessLog(AbstractAccessLogger):
    """aiohttp's access log without the query string (where the token travels): method, path, status."""

    def log(self, request: BaseRequest, response: StreamResponse, elapsed: float) -> None:
        self.logger.info("%s %s from %s: %s", request.method, shown(request.path), request.remote, response.status)
