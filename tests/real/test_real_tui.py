"""The TUI against the real model, driven by keys through Textual's pilot: a question typed in the query bar
ends with every source annotated or failed, the answer on screen as the session stored it."""

from __future__ import annotations

import asyncio

from ragtui.config import load_settings
from ragtui.history import HistoryStore
from ragtui.tui.app import RagtuiApp
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.synthesis import SynthesisView
from tests.real.conftest import LIMITS, MODEL_ID, Real
from tests.tui.conftest import handled, main_screen
from tests.tui.test_session import DIALOGS

QUESTION = "What did Lincoln say at Gettysburg about the dead?"
SETTLED = {"relevant", "irrelevant", "failed"}


async def settle(app: RagtuiApp, pilot) -> None:
    """Let the workers finish; the guard against hanging is long, since the model writes a few tokens a second."""
    for _ in range(3):
        for worker in list(app.workers):
            if worker.group not in DIALOGS and not worker.is_cancelled:
                await asyncio.wait_for(worker.wait(), 1200)
        await handled(main_screen(app).research)
        await pilot.pause()


async def test_a_question_in_the_tui(real: Real) -> None:
    settings = load_settings(user_file=real.home / "none.toml", env={}, overrides=[
        f"storage.data_dir={real.data}", f"ollama.host={real.ollama}", "llm.provider=openai",
        f"llm.base_url={real.server}", f"llm.model={MODEL_ID}", *LIMITS])
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await pilot.press("slash", *QUESTION, "enter")
        await settle(app, pilot)
        session = main.research.session
        assert session is not None and session.id
        panel = app.query_one(SourcesPanel)
        assert set(panel.sources) == {s.number for s in session.turn.sources} != set()
        for source in session.turn.sources:
            assert source.state.value in SETTLED, source
            assert source.state.value != "failed" or (source.error and "\n" not in source.error)
        assert session.answer.strip() and app.query_one(SynthesisView).text == session.answer
        assert HistoryStore(real.data).load(session.id).turns[0].answer == session.answer
