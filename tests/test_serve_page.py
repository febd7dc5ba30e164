"""`ragtui serve` shows a cited PDF page at full resolution: in a real headless browser (Debian's Chromium driven
by Playwright), a query over a PDF, `v` on its source (the page view, in half-blocks in the browser's terminal),
then `o`: the browser opens a new tab on the served PNG, fetched from the same server under its token, the same
bytes `ragtui page` writes. A request for it from another origin, or without the token, is refused."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama
from tests.serve_process import CHROMIUM, CHROMIUM_ARGS, PageTerminal, serve
from tests.test_page_cli import SETTINGS, quoting, write_pdfs


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

    responses: list[Any] = []

    with serve(tmp_path / "data", fake_ollama.url, *SETTINGS, "--set", "llm.model=chat",
               "--set", "synonyms.enabled=false") as served, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.on("response", lambda response: responses.append(response))
            page = context.new_page()
            terminal = PageTerminal(page)
            page.goto(served.url)
            page.wait_for_selector("body.-first-byte", timeout=120_000)
            terminal.wait_for("Query · papers")
            page.click(".textual-terminal")
            page.keyboard.type("thermal barrier coatings")
            page.keyboard.press("Enter")
            terminal.wait_for("saved as session 1")
            page.keyboard.press("Tab")               # from the query bar to the sources
            page.keyboard.press("v")
            terminal.wait_for("zoomed to the boxes")
            number = re.findall(r"\[(\d+)\] papers/coatings\.pdf +the chunk", terminal.text())[-1]
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
