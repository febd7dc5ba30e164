"""Who may use `ragtui serve`: the per-start token, and the Host and Origin every request must carry.

A browser lets any web page open a WebSocket to any address, loopback included; it sends the page's
own Origin with the handshake and leaves the check to the server (RFC 6455, section 10.2). A page can
also reach a loopback server under a name its owner controls by DNS rebinding, and then the Host
header carries that name. So, as Jupyter does, every request (the page, its assets, the WebSocket,
downloads) must

- name in `Host` an address this server serves (`Guard.host_ok`),
- come from one of those addresses when it says where it comes from: a foreign `Origin` is refused
  always, a missing one on the WebSocket (browsers always send it there),
- carry the token printed at start: `?token=...` in the URL, or the cookie the first page load with
  that token sets (HttpOnly, SameSite=Strict), so that reloads and the page's own requests work.

A refusal is a 403 with one line saying why, before any handler runs (so before any TUI starts).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import hdrs, web

from ragtui.sanitize import one_line
from ragtui.serve.logs import LOGGER

TOKEN_PARAM = "token"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SHOWN = 120            # at most this much of an untrusted header in a message

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    """A fresh random token (256 bits), one per start of `ragtui serve`."""
    return secrets.token_urlsafe(32)


def is_wildcard(host: str) -> bool:
    """0.0.0.0, :: or "" (every address of the machine)."""
    if not host:
        return True
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Endpoint:
    scheme: str
    host: str           # lower case; an IPv6 address without its brackets
    port: int


def _parse_origin(value: str) -> Endpoint | None:
    """`scheme://host[:port]` as an Endpoint; None for anything else (`null`, a path, user info)."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path or parts.query or parts.fragment \
            or "@" in parts.netloc:
        return None
    return Endpoint(parts.scheme, parts.hostname, port if port is not None else _DEFAULT_PORTS[parts.scheme])


def _parse_host(value: str) -> tuple[str, int | None] | None:
    """A Host header's name (lower case) and port (None when it names none); None when it is not one."""
    try:
        parts = urlsplit(f"//{value}")
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    return parts.hostname, port


class Guard:
    """The served addresses and the token; `middleware` refuses every request that does not match them.

    The addresses: the loopback names (localhost, 127.0.0.1, [::1]) and the `--host` given, at the
    served port, over http; the `--public-url` (scheme, name and port); and, when `--host` is a
    wildcard (0.0.0.0 or ::, only with --allow-remote), any IP address at the served port, since an
    address typed as digits cannot be rebound to another machine the way a name can.
    """

    def __init__(self, token: str, *, host: str, port: int, public_url: str) -> None:
        self.token = token
        self.cookie_name = f"ragtui-serve-{port}"      # cookies ignore ports: one name per served port
        names = set(LOOPBACK_NAMES)
        if not is_wildcard(host):
            names.add(host.lower().strip("[]"))
        self._endpoints = {Endpoint("http", name, port) for name in names}
        parts = urlsplit(public_url)
        public = _parse_origin(f"{parts.scheme}://{parts.netloc}")     # a proxy may serve it under a path
        if public is not None:
            self._endpoints.add(public)
        self._any_ip_port = port if is_wildcard(host) else None

    def _served(self, host: str, port: int | None, scheme: str | None) -> bool:
        """Is host:port (port None: the scheme's default port) one of the served addresses?"""
        if self._any_ip_port is not None and _is_ip(host) and scheme in (None, "http") and \
                (port == self._any_ip_port or (port is None and self._any_ip_port == 80)):
            return True
        return any(e.host == host and (scheme is None or e.scheme == scheme)
                   and (e.port == port or (port is None and e.port == _DEFAULT_PORTS[e.scheme]))
                   for e in self._endpoints)

    def host_ok(self, value: str | None) -> bool:
        parsed = _parse_host(value) if value else None
        return parsed is not None and self._served(parsed[0], parsed[1], None)

    def origin_ok(self, value: str) -> bool:
        origin = _parse_origin(value)
        return origin is not None and self._served(origin.host, origin.port, origin.scheme)

    def _matches(self, candidate: str | None) -> bool:
        return candidate is not None and hmac.compare_digest(candidate.encode(), self.token.encode())

    def refusal(self, request: web.Request) -> str | None:
        """Why this request is refused (one line), or None when it may go on."""
        host = request.headers.get(hdrs.HOST)
        if not self.host_ok(host):
            return f"Host {_shown(host)} is not an address this server serves (a DNS rebinding attempt?)"
        origin = request.headers.get(hdrs.ORIGIN)
        if origin is not None and not self.origin_ok(origin):
            return f"a request from another site (Origin {_shown(origin)})"
        if origin is None and request.headers.get(hdrs.UPGRADE, "").lower() == "websocket":
            return "a WebSocket without an Origin header"
        if not (self._matches(request.query.get(TOKEN_PARAM)) or self._matches(request.cookies.get(self.cookie_name))):
            return "no valid token: open the URL `ragtui serve` printed when it started (it ends in ?token=...)"
        return None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        reason = self.refusal(request)
        if reason is not None:
            logging.getLogger(LOGGER).warning("refused %s %s from %s: %s", request.method, _shown(request.path),
                                              request.remote, reason)
            raise web.HTTPForbidden(text=f"ragtui serve: refused: {reason}\n",
                                    headers={"Referrer-Policy": "no-referrer"})
        response = await handler(request)
        if not response.prepared:
            # the token is in the page's URL: it must never travel to another site in a Referer
            response.headers["Referrer-Policy"] = "no-referrer"
            if self._matches(request.query.get(TOKEN_PARAM)) and \
                    not self._matches(request.cookies.get(self.cookie_name)):
                response.set_cookie(self.cookie_name, self.token, httponly=True, samesite="Strict", path="/")
        return response


def _shown(value: str | None) -> str:
    """An untrusted header value, made inert and short enough for one line."""
    if value is None:
        return "(none)"
    text = one_line(value)
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")
