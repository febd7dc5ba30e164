"""`ragtui serve` refuses every web page but its own: a real `ragtui serve` on loopback, driven by a real HTTP and
WebSocket client (aiohttp's). A foreign Origin, a WebSocket without one, a missing or wrong token, a rebinding Host
and one session past `serve.max_sessions` are refused before any TUI process starts; the URL printed at start
(and the cookie its first load sets) gets a session; the page asks nothing of another origin.
"""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import aiohttp
import pytest

from tests.fake_ollama import FakeOllama
from tests.serve_process import Served, serve, wait_until


@pytest.fixture
def served(tmp_path: Path, fake_ollama: FakeOllama) -> Iterator[Served]:
    with serve(tmp_path / "data", fake_ollama.url) as server:
        yield server


async def refused(served: Served, path: str, *, status: int = 403, **headers: str) -> str:
    """A WebSocket handshake to PATH that the server refuses with STATUS; its one-line reason."""
    async with aiohttp.ClientSession() as http, http.get(f"{served.origin}{path}", headers={
            "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", **headers}) as response:
        assert response.status == status, (response.status, await response.text())
        return await response.text()


async def first_frame(ws: aiohttp.ClientWebSocketResponse) -> bytes:
    """The first bytes the session's TUI sends (its screen): proof that it runs."""
    while True:
        message = await ws.receive(timeout=120)      # a guard against hanging, not a timing check
        assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), message
        if message.type is aiohttp.WSMsgType.BINARY:
            return bytes(message.data)


async def test_a_foreign_origin_is_refused(served: Served) -> None:
    reason = await refused(served, f"/ws?token={served.token}", Origin="http://evil.example")
    assert "another site (Origin 'http://evil.example')" in reason
    async with aiohttp.ClientSession() as http:
        async with http.get(served.url, headers={"Origin": "http://evil.example"}) as page:
            assert page.status == 403
        with pytest.raises(aiohttp.WSServerHandshakeError) as refusal:
            await http.ws_connect(f"{served.origin}/ws?token={served.token}", origin="http://127.0.0.1.evil.example")
        assert refusal.value.status == 403
    assert served.tui_processes() == []


async def test_a_websocket_without_an_origin_is_refused(served: Served) -> None:
    assert "without an Origin" in await refused(served, f"/ws?token={served.token}")
    assert served.tui_processes() == []


async def test_a_missing_or_wrong_token_is_refused(served: Served) -> None:
    for path in ("/ws", "/ws?token=", f"/ws?token={served.token[:-1]}", f"/ws?token={served.token}x"):
        assert "no valid token" in await refused(served, path, Origin=served.origin)
    async with aiohttp.ClientSession(cookies={f"ragtui-serve-{served.port}": "guessed"}) as http:
        for path in ("/", "/static/js/textual.js", "/static/", "/download/x"):
            async with http.get(f"{served.origin}{path}") as response:
                assert response.status == 403, path
                assert "open the URL `ragtui serve` printed" in await response.text()
    assert served.tui_processes() == []


async def test_a_rebinding_host_is_refused(served: Served) -> None:
    for host in (f"evil.example:{served.port}", f"127.0.0.1.evil.example:{served.port}", "127.0.0.1:1", ""):
        reason = await refused(served, f"/ws?token={served.token}", Host=host, Origin=f"http://{host}")
        assert "is not an address this server serves" in reason
    async with aiohttp.ClientSession() as http:
        async with http.get(served.url, headers={"Host": f"evil.example:{served.port}"}) as page:
            assert page.status == 403
        async with http.get(served.url.replace("127.0.0.1", "localhost")) as page:   # another served name
            assert page.status == 200
    assert served.tui_processes() == []


async def test_the_printed_url_gets_a_session_and_its_cookie_the_next_ones(served: Served) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(served.url) as page:        # the first load, with the token in the URL
            assert page.status == 200
            cookie = page.cookies[f"ragtui-serve-{served.port}"]
            assert cookie.value == served.token and cookie["httponly"] and cookie["samesite"] == "Strict"
        async with http.get(f"{served.origin}/static/css/xterm.css") as asset:   # then the cookie alone
            assert asset.status == 200
        async with http.ws_connect(f"{served.origin}/ws?width=100&height=30", origin=served.origin) as ws:
            assert await first_frame(ws)
            assert len(served.tui_processes()) == 1


def test_one_session_past_the_cap_is_refused(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    import asyncio

    async def scenario(served: Served) -> None:
        url = f"{served.origin}/ws?token={served.token}"
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(url, origin=served.origin) as ws:
                assert await first_frame(ws)
                assert len(served.tui_processes()) == 1
                reason = await refused(served, f"/ws?token={served.token}", status=503, Origin=served.origin)
                assert "all 1 sessions are in use (serve.max_sessions)" in reason
                assert len(served.tui_processes()) == 1
            wait_until(lambda: not served.tui_processes(), "the closed session's TUI never ended", served)
            async with http.ws_connect(url, origin=served.origin) as ws:     # the slot is free again
                assert await first_frame(ws)

    with serve(tmp_path / "data", fake_ollama.url, "--set", "serve.max_sessions=1") as served:
        asyncio.run(scenario(served))
        assert "refused a session" in served.output


class References(HTMLParser):
    """Every URL a page can make the browser fetch: href, src and *url attributes, and url(...) in styles."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_style = tag == "style"
        for name, value in attrs:
            if value and (name in ("href", "src", "action", "poster") or name.endswith("url")):
                self.urls.append(value)
            if value and name == "style":
                self.urls += _css_urls(value)

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.urls += _css_urls(data)


def _css_urls(css: str) -> list[str]:
    import re

    return [m.strip("'\" ") for m in re.findall(r"url\(([^)]*)\)", css)] + re.findall(r"@import\s+['\"]([^'\"]+)", css)


async def test_the_page_references_only_its_own_origin(served: Served) -> None:
    async with aiohttp.ClientSession() as http, http.get(served.url) as page:
        assert page.status == 200
        html = await page.text()
        policy = page.headers["Content-Security-Policy"]
        assert page.headers["Referrer-Policy"] == "no-referrer"
    parser = References()
    parser.feed(html)
    assert parser.urls, "the parser found no reference at all"
    hosts = {urlsplit(urljoin(served.url, url)).netloc for url in parser.urls}
    assert hosts == {f"127.0.0.1:{served.port}"}, parser.urls
    assert "googleapis" not in html and "fonts/RobotoMono-VariableFont_wght.ttf" in html
    assert "default-src 'none'" in policy and "https:" not in policy


def test_what_host_and_origin_a_guard_accepts() -> None:
    from ragtui.serve.guard import Guard

    local = Guard("t", host="127.0.0.1", port=8000, public_url="http://127.0.0.1:8000")
    assert all(local.host_ok(h) for h in ("127.0.0.1:8000", "localhost:8000", "LOCALHOST:8000", "[::1]:8000"))
    assert not any(local.host_ok(h) for h in (None, "", "127.0.0.1", "127.0.0.1:8001", "evil.example:8000",
                                              "localhost.evil.example:8000", "evil.example@127.0.0.1:8000",
                                              "127.0.0.1:8000/x", "127.0.0.1:99999", "10.0.0.1:8000"))
    assert local.origin_ok("http://127.0.0.1:8000") and local.origin_ok("http://localhost:8000")
    assert not any(local.origin_ok(o) for o in ("null", "https://127.0.0.1:8000", "http://127.0.0.1:8000/x",
                                                "http://evil.example:8000", "file://", "http://127.0.0.1"))
    on_80 = Guard("t", host="localhost", port=80, public_url="http://localhost:80")
    assert on_80.host_ok("localhost") and on_80.origin_ok("http://localhost")      # the default port is implied
    proxied = Guard("t", host="127.0.0.1", port=8000, public_url="https://ragtui.example.org/ragtui")
    assert proxied.host_ok("ragtui.example.org") and proxied.host_ok("127.0.0.1:8000")
    assert proxied.origin_ok("https://ragtui.example.org") and not proxied.origin_ok("http://ragtui.example.org")
    named = Guard("t", host="box.lan", port=8000, public_url="http://box.lan:8000")
    assert named.host_ok("box.lan:8000") and not named.host_ok("10.0.0.1:8000")
    wildcard = Guard("t", host="0.0.0.0", port=8000, public_url="http://0.0.0.0:8000")
    assert wildcard.host_ok("10.0.0.1:8000") and wildcard.host_ok("[fe80::1]:8000") and wildcard.origin_ok(
        "http://10.0.0.1:8000")
    assert not wildcard.host_ok("box.lan:8000") and not wildcard.host_ok("10.0.0.1:8001")
