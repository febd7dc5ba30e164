"""The TUI against a server that cuts the running stream when another request arrives (llama-cpp-python's), with
the shipped annotation.concurrency = 4: every source annotated, and the lowered concurrency said once as a notice."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragtui.config import Settings
from ragtui.model.conversation import AnnotationState
from ragtui.tui.app import RagtuiApp
from tests.fake_openai import FakeOpenAI
from tests.test_interrupting_server import interrupting, replies, write_pump_notes  # noqa: F401 (a fixture)
from tests.tui.conftest import main_screen
from tests.tui.test_session import ask, ingest, settle


async def test_the_tui_annotates_every_source_and_says_the_concurrency_was_lowered_once(
        make_settings: Callable[..., Settings], tmp_path: Path, interrupting: FakeOpenAI) -> None:  # noqa: F811
    settings = make_settings("llm.provider=openai", f"llm.base_url={interrupting.url}", "llm.model=served-model")
    await ingest(settings, write_pump_notes(tmp_path), "docs")
    assert settings.annotation.concurrency == 4 and interrupting.responder is replies
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await ask(app, pilot, "how do pumps start")
        session = main_screen(app).research.session
        assert session is not None and len(session.sources) >= 8
        assert [s.state for s in session.sources] == [AnnotationState.RELEVANT] * len(session.sources)
        assert interrupting.interrupted >= 2
        lowered = [n for n in app.notices if "annotation.concurrency" in n.message]
        assert [(n.severity, n.message.split(";")[0]) for n in lowered] == [
            ("warning", "annotation streams from served-model were cut while others were in flight")]
