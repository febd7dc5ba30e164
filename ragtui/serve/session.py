"""One browser tab's session: its TUI process, the terminal size it may ask for, the browser's messages relayed
to it, and the end of that process when the tab's socket closes.

The browser says how big its terminal is (the page URL's `width`/`height`, then `resize` messages), and the
TUI lays out and paints a screen of that many cells: 1e9 x 1e9 would have it allocate until the machine
gives out. Sizes are clamped to `MAX_WIDTH` x `MAX_HEIGHT` cells, more than the largest real screen shows
(a 7680 x 4320 pixel 8K screen in a 16 x 32 pixel font is 480 x 135 cells), and at least 1 x 1.

When the socket closes the process is told to quit (textual's web driver protocol), then, if it has not
ended within `QUIT_S`, sent SIGTERM, then SIGKILL after `TERM_S`, each to its whole process group (it runs
in a session of its own, so workers it started end with it); only then is its slot freed. Textual answers
SIGTERM by posting the same quit to its event loop, so a TUI whose loop is busy, or whose exit waits for a
thread (the engine's imports, in the first seconds), ends by SIGKILL; ragtui's stores are written to
survive that (a re-run completes an interrupted ingest).

A message the browser sends that is not one of textual-serve's (`stdin`, `resize`, `ping`, `focus`,
`blur`, each of the right shape) is dropped; their number is logged once, when the session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shlex
import signal
from asyncio.subprocess import Process
from typing import Any

from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService

from ragtui.server_limits import ReplyLimit, loads

MAX_WIDTH = 500
MAX_HEIGHT = 200
QUIT_S = 3.0            # a TUI asked to quit that has not ended by then is stopped with SIGTERM
TERM_S = 3.0            # and then with SIGKILL
_WHOLE = re.compile(r"[+-]?[0-9]{1,30}")
_MAX_PING = 64          # characters of a ping's payload echoed back

log = logging.getLogger("ragtui.serve")


def clamped(value: object, default: int, most: int) -> int:
    """A size the browser sent (a URL parameter's text, or a JSON number) as 1..`most` cells; `default` when it
    is no whole number."""
    if isinstance(value, str):
        if not _WHOLE.fullmatch(value.strip()):
            return default
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return max(1, min(value, most))


class TuiProcess(AppService):
    """textual-serve's AppService, with the size clamped and a process that is made to end."""

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        width, height = clamped(width, 80, MAX_WIDTH), clamped(height, 24, MAX_HEIGHT)
        self._process = process = await asyncio.create_subprocess_exec(
            *shlex.split(self.command), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._build_environment(width=width, height=height),
            start_new_session=True)
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def set_terminal_size(self, width: int, height: int) -> None:
        await super().set_terminal_size(clamped(width, 80, MAX_WIDTH), clamped(height, 24, MAX_HEIGHT))

    async def stop(self) -> None:
        """Ask the TUI to quit; SIGTERM, then SIGKILL, when it does not end in time; wait for its output to end."""
        if self._task is None:
            return
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        await self.send_meta({"type": "quit"})
        process = self._process
        if process is not None:
            for stop_signal, grace in ((None, QUIT_S), (signal.SIGTERM, TERM_S), (signal.SIGKILL, None)):
                if stop_signal is not None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, stop_signal)
                try:
                    await asyncio.wait_for(process.wait(), grace)
                    break
                except TimeoutError:
                    continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)      # whatever it started and left behind
        task, self._task = self._task, None
        await task


async def relay(websocket: web.WebSocketResponse, app: TuiProcess) -> int:
    """Pass the browser's messages to the TUI until the socket closes; the number of messages dropped."""
    dropped = 0
    async for message in websocket:
        if message.type is not WSMsgType.TEXT:
            continue
        if not await _handle(message.data, websocket, app):
            dropped += 1
    return dropped


async def _handle(text: str, websocket: web.WebSocketResponse, app: TuiProcess) -> bool:
    """One message of textual-serve's protocol acted on; False when it is not one."""
    try:
        envelope = loads(text, "the browser")
    except (ValueError, ReplyLimit):
        return False
    if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
        return False
    kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
    if kind == "stdin" and isinstance(data, str):
        await app.send_bytes(data.encode("utf-8", "replace"))
    elif kind == "resize" and isinstance(data, dict) and _is_number(data.get("width")) \
            and _is_number(data.get("height")):
        await app.set_terminal_size(data["width"], data["height"])
    elif kind == "ping" and isinstance(data, str | int | float) and len(str(data)) <= _MAX_PING:
        await websocket.send_json(["pong", data])
    elif kind == "blur":
        await app.blur()
    elif kind == "focus":
        await app.focus()
    else:
        return False
    return True


def _is_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
