"""textual-serve's aiohttp server with ragtui's guard, a cap on sessions, a page that stays on its own origin,
one-line logs (serve/logs.py) and sessions whose processes end with their sockets (serve/session.py).

Each WebSocket session runs its own ragtui process (about 120 MB), so at most `serve.max_sessions`
run at once; one more is refused with a 503 and one line saying why, before its process starts. The
port is bound before the URL is printed: a port in use is one error, and no URL that leads nowhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal

from aiohttp import web
from textual_serve.server import Server

from ragtui.errors import RagtuiError
from ragtui.serve import logs
from ragtui.serve.guard import TOKEN_PARAM, Guard
from ragtui.serve.page import content_security_policy, origin_of, own_origin_only
from ragtui.serve.session import MAX_HEIGHT, MAX_WIDTH, TuiProcess, clamped, relay


class PortUnavailable(RagtuiError):
    """The address or port could not be bound (in use, not this machine's, not allowed)."""


class GuardedServer(Server):
    def __init__(self, command: str, *, host: str, port: int, public_url: str | None, guard: Guard,
                 max_sessions: int) -> None:
        super().__init__(command, host=host, port=port, title="ragtui", public_url=public_url)
        self.guard = guard
        self.max_sessions = max_sessions
        self.sessions = 0
        self.log = logs.configure()
        self._sockets: set[web.WebSocketResponse] = set()

    @property
    def url(self) -> str:
        """The URL to open, with the token."""
        return f"{self.public_url.rstrip('/')}/?{TOKEN_PARAM}={self.guard.token}"

    def initialize_logging(self) -> None:
        """Logging is `logs.configure`'s, done at construction."""

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self.guard.middleware)
        return app

    async def on_startup(self, app: web.Application) -> None:
        """Nothing: the URL is printed once the port is bound (`serve`)."""

    def serve(self, debug: bool = False) -> None:
        """Bind, print the URL, serve until SIGINT or SIGTERM; then end every session's process."""
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        runner = web.AppRunner(await self._make_app(), handle_signals=False, access_log_class=logs.AccessLog)
        await runner.setup()
        try:
            try:
                await web.TCPSite(runner, self.host, self.port).start()
            except OSError as exc:
                raise PortUnavailable(f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}",
                                      hint="choose another --port, or stop what is using it") from None
            print(f"ragtui serve: open {self.url} in a browser (this token is new at every start; Ctrl+C stops)",
                  flush=True)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for stop_signal in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(stop_signal, stop.set)
            await stop.wait()
            for websocket in list(self._sockets):       # each session's handler then ends its process
                await websocket.close(code=1001, message=b"ragtui serve is stopping")
        finally:
            await runner.cleanup()

    async def handle_index(self, request: web.Request) -> web.Response:
        response = await super().handle_index(request)
        assert isinstance(response, web.Response)       # aiohttp_jinja2 renders the whole page into one
        origin = origin_of(self.public_url)
        response.text = own_origin_only(response.text or "", origin, f"{self.public_url.rstrip('/')}/static/",
                                        self.statics_path)
        response.headers["Content-Security-Policy"] = content_security_policy(origin)
        return response

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        if self.sessions >= self.max_sessions:
            reason = (f"all {self.max_sessions} sessions are in use (serve.max_sessions); close a ragtui tab, "
                      "then reload")
            self.log.warning("refused a session from %s: %s", request.remote, reason)
            raise web.HTTPServiceUnavailable(text=f"ragtui serve: refused: {reason}\n")
        self.sessions += 1
        try:
            return await self._session(request)
        finally:
            self.sessions -= 1

    async def _session(self, request: web.Request) -> web.WebSocketResponse:
        """One tab: its TUI (sized as the URL asks, within limits) fed the socket's messages until it closes."""
        websocket = web.WebSocketResponse(heartbeat=15)
        await websocket.prepare(request)
        self._sockets.add(websocket)

        async def close() -> None:
            await websocket.close()

        app = TuiProcess(self.command, write_bytes=websocket.send_bytes, write_str=websocket.send_str, close=close,
                         download_manager=self.download_manager)
        dropped = 0
        try:
            await app.start(clamped(request.query.get("width", "80"), 80, MAX_WIDTH),
                            clamped(request.query.get("height", "24"), 24, MAX_HEIGHT))
            dropped = await relay(websocket, app)
        except (ConnectionError, asyncio.CancelledError):
            pass                            # the socket went away mid-message, or the server is stopping
        finally:
            self._sockets.discard(websocket)
            await asyncio.shield(app.stop())
            with contextlib.suppress(ConnectionError):
                await websocket.close()
        if dropped:
            self.log.warning("a session from %s sent %d messages that are not textual-serve's; they were dropped",
                             request.remote, dropped)
        return websocket
