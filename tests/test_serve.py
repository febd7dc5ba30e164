"""`ragtui serve`: refusing a non-loopback address without --allow-remote, the warning with it, and a real
headless browser (Debian's Chromium driven by Playwright) using the served app: the page loads, a typed query
shows its sources and a cited answer. Every LLM call goes to the fake Ollama server.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from ragtui.cli import build_parser, main
from ragtui.cli.serve_cmd import app_command, is_loopback
from ragtui.config import Settings
from ragtui.workspace import Workspace
from tests.fake_ollama import FakeOllama, Reply
from tests.serve_process import CHROMIUM, CHROMIUM_ARGS, PageTerminal, Served, serve

ROOT = Path(__file__).resolve().parents[1]
ANSWER = "Primed pumps start at 3 bar [1]."


def test_loopback_only_unless_allowed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.org")
    assert main(["--config", os.devnull, "--data-dir", str(tmp_path), "serve",
                 "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err
    assert main(["--config", os.devnull, "serve", "--port", "0"]) == 2
    assert main(["--config", os.devnull, "serve", "--public-url", "javascript:alert(1)//"]) == 2
    assert "--public-url must be an http:// or https:// URL" in capsys.readouterr().err


def test_the_served_command_carries_the_configuration(tmp_path: Path) -> None:
    args = build_parser().parse_args(["--config", str(tmp_path / "my config.toml"), "--data-dir", "/d; rm -rf ~",
                                      "--set", "llm.model=chat", "serve"])
    argv = shlex.split(app_command(args))
    assert argv == [sys.executable, "-m", "ragtui", "--config", str(tmp_path / "my config.toml"),
                    "--data-dir", "/d; rm -rf ~", "--set", "llm.model=chat"]
    assert isinstance(args, argparse.Namespace)


def test_a_remote_address_warns_that_the_token_is_the_only_authentication(tmp_path: Path,
                                                                           fake_ollama: FakeOllama) -> None:
    """On a wildcard address (with --allow-remote), a Host that is any IP address at the port is served (digits
    cannot be rebound to another machine); a name other than localhost is not."""
    import urllib.error
    import urllib.request

    def status(served: Served, host: str) -> int:
        request = urllib.request.Request(served.url.replace("0.0.0.0", "127.0.0.1"), headers={"Host": host})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return error.code

    with serve(tmp_path / "data", fake_ollama.url, serve_args=("--host", "0.0.0.0", "--allow-remote")) as served:
        assert "WARNING: serving on 0.0.0.0, which is not loopback. The token is the only authentication" in \
            served.output
        assert served.url.startswith(f"http://0.0.0.0:{served.port}/?token=")
        assert status(served, f"192.168.1.4:{served.port}") == 200
        assert status(served, f"localhost:{served.port}") == 200
        assert status(served, f"ragtui.example:{served.port}") == 403
        assert status(served, "192.168.1.4:1") == 403


@pytest.fixture
def served(make_settings: Callable[..., Settings], fake_ollama: FakeOllama, tmp_path: Path) -> Iterator[Served]:
    import asyncio

    settings = make_settings()

    async def ingest() -> None:
        async with Workspace(settings) as workspace:
            docs = [("pumps.md", "Centrifugal pumps must be primed. A primed pump starts at 3 bar of pressure."),
                    ("lunch.md", "The cafeteria serves soup on Mondays.")]
            async for _ in workspace.ingest_documents("docs", docs):
                pass

    asyncio.run(ingest())

    def respond(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        if "EXTRACT" in last:
            return Reply.text("[IRRELEVANT!!!]") if "cafeteria" in last else Reply.text('"A primed pump" relevant.')
        return Reply.text(ANSWER)

    fake_ollama.responder = respond
    with serve(settings.data_dir, fake_ollama.url, "--set", "llm.model=chat", "--set", "synonyms.enabled=false") as s:
        yield s


def test_a_query_in_a_real_browser(served: Served, tmp_path: Path) -> None:
    """The URL `serve` printed, with its token, opened in Chromium; every request the page makes stays on its origin
    (no web font from another host) and the page's Content-Security-Policy blocks nothing it needs."""
    if not CHROMIUM.exists():
        pytest.skip(f"Debian's Chromium is not installed ({CHROMIUM}); .ci/run installs it: apt-get install -y "
                    "chromium")
    from playwright.sync_api import sync_playwright

    requested: list[str] = []
    console: list[str] = []

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            terminal = PageTerminal(page)
            page.on("request", lambda request: requested.append(request.url))
            page.on("console", lambda message: console.append(message.text))
            page.goto(served.url)
            page.wait_for_selector("body.-first-byte", timeout=120_000)
            terminal.wait_for("Query · docs")                 # the TUI's query bar, with the collection active
            page.click(".textual-terminal")       # the query bar has the focus: type at once (during the warm-up)
            page.keyboard.type("how does a pump start")
            page.keyboard.press("Enter")
            terminal.wait_for("pumps.md")                     # the sources table
            terminal.wait_for(ANSWER.removesuffix(" [1]."))   # the answer, streamed
            terminal.wait_for("[1]")
            page.screenshot(path=str(tmp_path / "served.png"))
        finally:
            browser.close()
    text = terminal.text()
    assert "relevant" in text and "saved as session 1" in text
    assert requested and {urlsplit(url).netloc for url in requested} == {f"127.0.0.1:{served.port}"}, requested
    assert f"{served.origin}/static/fonts/RobotoMono-VariableFont_wght.ttf" in requested
    assert not [line for line in console if "Content Security Policy" in line], console
