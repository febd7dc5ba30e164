"""textual-serve's aiohttp server with ragtui's guard, a cap on sessions and a page that stays on its own origin.

Each WebSocket session runs its own ragtui process (about 120 MB), so at most `serve.max_sessions`
run at once; one more is refused with a 503 and one line saying why, before its process starts.
"""

from __future__ import annotations

import sys

from aiohttp import web
from textual_serve.server import Server

from ragtui.serve.guard import TOKEN_PARAM, Guard
from ragtui.serve.page import content_security_policy, origin_of, own_origin_only


class GuardedServer(Server):
    def __init__(self, command: str, *, host: str, port: int, public_url: str | None, guard: Guard,
                 max_sessions: int) -> None:
        super().__init__(command, host=host, port=port, title="ragtui", public_url=public_url)
        self.guard = guard
        self.max_sessions = max_sessions
        self.sessions = 0

    @property
    def url(self) -> str:
        """The URL to open, with the token."""
        return f"{self.public_url.rstrip('/')}/?{TOKEN_PARAM}={self.guard.token}"

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self.guard.middleware)
        return app

    async def on_startup(self, app: web.Application) -> None:
        print(f"ragtui serve: open {self.url} in a browser (this token is new at every start; Ctrl+C stops)",
              flush=True)

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
            print(f"ragtui serve: refused a session from {request.remote}: {reason}", file=sys.stderr, flush=True)
            raise web.HTTPServiceUnavailable(text=f"ragtui serve: refused: {reason}\n")
        self.sessions += 1
        try:
            return await super().handle_websocket(request)
        finally:
            self.sessions -= 1
