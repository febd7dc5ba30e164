"""`ragtui serve` shows a cited PDF page at full resolution: in a real headless browser (Debian's Chromium driven
by Playwright), a query over a PDF, `v` on its source (the page view, in half-blocks in the browser's terminal),
then `o`: the browser opens a new tab on the served PNG, fetched from the same server under its token, the same
bytes `ragtui page` writes. A request for it from another origin, or without the token, is refused."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama
from tests.serve_process import serve
from tests.test_page_cli import SETTINGS, quoting, write_pdfs
from tests.test_serve import _ESCAPES, CHROMIUM, CHROMIUM_ARGS


def test_o_in_the_page_view_opens_the_full_page_in_the_browser(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"Debian's Chromium is not installed ({CHROMIUM}); .ci/run installs it: apt-get install -y "
                    "chromium")
    from playwright.sync_api import sync_playwright

    folder = tmp_path / "papers"
    folder.mkdir()
    write_pdfs(folder)
    (folder / "cooling.pdf").unlink()
    assert cli(tmp_path, fake_ollama.url, *SETTINGS, "ingest", str(folder), "-c", "papers").returncode == 0
    fake_ollama.responder = quoting

    received: list[bytes] = []
    responses: list[Any] = []

    def screen_text() -> str:
        return _ESCAPES.sub("", b"".join(received).decode("utf-8", "replace"))

    def wait_for(text: str) -> None:
        deadline = time.monotonic() + 120       # a guard against hanging, not a timing check
        while text not in screen_text():
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never reached the page: {screen_text()[-3000:]!r}")
            page.wait_for_timeout(200)

    with serve(tmp_path / "data", fake_ollama.url, *SETTINGS, "--set", "llm.model=chat",
               "--set", "synonyms.enabled=false") as served, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.on("response", lambda response: responses.append(response))
            page = context.new_page()
            page.on("websocket", lambda ws: ws.on(
                "framereceived", lambda frame: received.append(frame if isinstance(frame, bytes) else b"")))
            page.goto(served.url)
            page.wait_for_selector("body.-first-byte", timeout=120_000)
            wait_for("Query · papers")
            page.click(".textual-terminal")
            page.keyboard.type("thermal barrier coatings")
            page.keyboard.press("Enter")
            wait_for("saved as session 1")
            page.keyboard.press("Tab")               # from the query bar to the sources
            page.keyboard.press("v")
            wait_for("zoomed to the boxes")
            number = re.findall(r"\[(\d+)\] papers/coatings\.pdf +the chunk", screen_text())[-1]
            with context.expect_page(timeout=120_000) as opened:
                page.keyboard.press("o")
            tab = opened.value
            tab.wait_for_load_state()
            shown_at = tab.url
            answer = next(r for r in responses if r.url == shown_at)
            png = answer.body()
            assert answer.status == 200 and answer.headers["content-type"] == "image/png"
        finally:
            browser.close()
        # the tab's URL, asked again without the browser's cookie: refused (the token guards it)
        assert urlsplit(shown_at).netloc == f"127.0.0.1:{served.port}" and "/download/" in shown_at
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(shown_at, timeout=30)
        assert refused.value.code == 403

    written = tmp_path / "page.png"
    done = cli(tmp_path, fake_ollama.url, *SETTINGS, "page", "--session", "1", number, "-o", str(written))
    assert done.returncode == 0, done.stderr
    assert png == written.read_bytes()                           # the page, boxed, at full resolution
