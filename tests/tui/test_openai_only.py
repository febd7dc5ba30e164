"""The TUI with chat and embeddings on one OpenAI-compatible server (llama.cpp's, vLLM) and no Ollama: it names
that server, shows it reachable (no "keyword-only", no "no answer"), never asks Ollama, and answers a question."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.widgets.status import StatusLine
from ragtui.tui.widgets.synthesis import SynthesisView
from tests.fake_ollama import FakeOllama
from tests.fake_openai import FakeOpenAI
from tests.tui.conftest import main_screen
from tests.tui.test_session import ask, ingest, settle, write_corpus


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.answer = "Centrifugal pumps start at 3 bar [1]."
    fake.start()
    yield fake
    fake.stop()


async def test_the_tui_follows_an_openai_compatible_server_for_chat_and_embeddings(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama, server: FakeOpenAI, tmp_path: Path) -> None:
    settings = make_settings("llm.provider=openai", f"llm.base_url={server.url}", "llm.model=served-model",
                             "embed.provider=openai", "embed.model=embed-model", "annotation.enabled=false")
    await ingest(settings, write_corpus(tmp_path))
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(app, pilot)
        status = app.query_one(StatusLine)
        line = str(status.render())
        host = server.url.removeprefix("http://")
        assert f"● llm+embed {host}" in line
        assert "down" not in line and "KEYWORD-ONLY" not in line and "ollama" not in line
        banner = str(app.query_one("#synthesis-banner").render())
        assert "keyword-only" not in banner.lower() and "no answer" not in banner
        await ask(app, pilot, "how do pumps start")
        session = main_screen(app).research.session
        assert session is not None and not session.turn.keyword_only
        assert app.query_one(SynthesisView).text == "Centrifugal pumps start at 3 bar [1]."
        assert "KEYWORD-ONLY" not in str(status.render())
    assert fake_ollama.requests == []            # Ollama, configured at its default place, was never asked
    assert any(r.get("input") for r in server.requests)   # the query was embedded by the server
