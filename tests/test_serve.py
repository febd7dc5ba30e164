"""`ragtui serve`: refusing a non-loopback address without --allow-remote, the warning with it, and a real
headless browser (Debian's Chromium driven by Playwright) using the served app: the page loads, a typed query
shows its sources and a cited answer. Every LLM call goes to the fake Ollama server.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ragtui.cli import build_parser, main
from ragtui.cli.serve_cmd import app_command, is_loopback
from ragtui.config import Settings
from ragtui.workspace import Workspace
from tests.fake_ollama import FakeOllama, Reply

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
ROOT = Path(__file__).resolve().parents[1]
ANSWER = "Primed pumps start at 3 bar [1]."
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|P[^\x1b]*\x1b\\|.)")


def test_loopback_only_unless_allowed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.org")
    assert main(["--config", os.devnull, "--data-dir", str(tmp_path), "serve",
                 "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err
    assert main(["--config", os.devnull, "serve", "--port", "0"]) == 2


def test_the_served_command_carries_the_configuration(tmp_path: Path) -> None:
    args = build_parser().parse_args(["--config", str(tmp_path / "my config.toml"), "--data-dir", "/d; rm -rf ~",
                                      "--set", "llm.model=chat", "serve"])
    argv = shlex.split(app_command(args))
    assert argv == [sys.executable, "-m", "ragtui", "--config", str(tmp_path / "my config.toml"),
                    "--data-dir", "/d; rm -rf ~", "--set", "llm.model=chat"]
    assert isinstance(args, argparse.Namespace)


def test_a_remote_address_warns_that_there_is_no_authentication(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "ragtui", "--config", os.devnull, "--data-dir",
                             str(tmp_path / "data"), "serve", "--host", "0.0.0.0", "--allow-remote", "--port",
                             str(port)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_port(port, proc)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert "WARNING: serving on 0.0.0.0, which is not loopback. There is no authentication" in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + 120      # a guard against hanging, not a timing check
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"ragtui serve did not listen on {port}")


@pytest.fixture
def served(make_settings: Callable[..., Settings], fake_ollama: FakeOllama, tmp_path: Path) -> Iterator[str]:
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
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "ragtui", "--config", os.devnull,
                             "--data-dir", str(settings.data_dir), "--ollama-host", fake_ollama.url,
                             "--set", "llm.model=chat", "--set", "synonyms.enabled=false",
                             "serve", "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        print("serve output:", proc.communicate(timeout=60)[0][-8000:])


def test_a_query_in_a_real_browser(served: str, tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"Debian's Chromium is not installed ({CHROMIUM}); .ci/run installs it: apt-get install -y "
                    "chromium")
    from playwright.sync_api import sync_playwright

    received: list[bytes] = []

    def screen_text() -> str:
        """What the app has sent the page's terminal so far, without its escape sequences."""
        return _ESCAPES.sub("", b"".join(received).decode("utf-8", "replace"))

    def wait_for(text: str) -> None:
        deadline = time.monotonic() + 120       # a guard against hanging, not a timing check
        while text not in screen_text():
            if time.monotonic() > deadline:
                page.screenshot(path="/tmp/served_fail.png")
                raise AssertionError(f"{text!r} never reached the page: {screen_text()[-3000:]!r}")
            page.wait_for_timeout(200)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("websocket", lambda ws: ws.on(
                "framereceived", lambda frame: received.append(frame if isinstance(frame, bytes) else b"")))
            page.goto(served)
            page.wait_for_selector("body.-first-byte", timeout=120_000)
            wait_for("Query · docs")                 # the TUI's query bar, with the collection active
            page.click(".textual-terminal")       # the query bar has the focus: type at once (during the warm-up)
            page.keyboard.type("how does a pump start")
            page.keyboard.press("Enter")
            wait_for("pumps.md")                     # the sources table
            wait_for(ANSWER.removesuffix(" [1]."))   # the answer, streamed
            wait_for("[1]")
            page.screenshot(path=str(tmp_path / "served.png"))
        finally:
            browser.close()
    text = screen_text()
    assert "relevant" in text and "saved as session 1" in text
