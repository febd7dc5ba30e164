"""One continue rule (`Turn.continue_refusal`), one answer everywhere: the engine's continue_answer, the TUI's c
and `ragtui ask --continue` (with and without --session) agree on a length-cut, a cancelled, a repetition-stopped
and a complete answer. The answers are stored sessions; the model is the fake Ollama over HTTP, the CLI a real
process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.events import Notice, SynthesisFinished, SynthesisStarted
from ragtui.history import HistoryStore
from ragtui.model.conversation import Conversation, StopReason, Turn
from ragtui.workspace import Workspace
from tests.cli_run import cli
from tests.fake_ollama import FakeOllama, Reply
from tests.tui.conftest import main_screen, quiet_app
from tests.tui.test_session import settle

PARTIAL = "Pumps start at"
REST = "start at 3 bar [1]."
WHOLE = "Pumps start at 3 bar [1]."
# stop reason -> whether the answer continues, and the words of the refusal when it does not
TABLE = [
    (StopReason.LENGTH, True, ""),
    (StopReason.CANCELLED, True, ""),
    (StopReason.REPETITION, False, "the answer was stopped because it repeated itself"),
    (StopReason.STOP, False, "the answer is complete: nothing to continue"),
]
IDS = [reason.value for reason, _, _ in TABLE]


def store(settings: Settings, reason: StopReason) -> int:
    """A session whose one answer stopped for `reason`, as the history keeps it."""
    from tests.tui.scripted import make_sources

    turn = Turn(query="How do pumps start?", sources=tuple(make_sources()[:1]), answer=PARTIAL, stop_reason=reason,
                prompt=(("system", "Answer from the sources."), ("user", "How do pumps start?")),
                prompt_numbers=(1,))
    saved = HistoryStore(settings.data_dir).save(Conversation(collections=("docs",), config={},
                                                               synthesis_model="chat", annotation_model="chat",
                                                               turns=(turn,)))
    assert saved.id is not None
    return saved.id


@pytest.mark.parametrize(("reason", "continues", "refusal"), TABLE, ids=IDS)
def test_the_noun(reason: StopReason, continues: bool, refusal: str) -> None:
    turn = Turn(query="q", answer=PARTIAL, stop_reason=reason, prompt=(("user", "q"),))
    assert turn.can_continue is continues
    assert turn.continue_refusal.startswith(refusal) and bool(turn.continue_refusal) is not continues


@pytest.mark.parametrize(("reason", "continues", "refusal"), TABLE, ids=IDS)
async def test_the_engine(make_settings: Callable[..., Settings], fake_ollama: FakeOllama, reason: StopReason,
                          continues: bool, refusal: str) -> None:
    settings = make_settings()
    session_id = store(settings, reason)
    fake_ollama.script(Reply.text(REST))
    async with Workspace(settings) as workspace:
        session = workspace.reopen(session_id)
        events = [event async for event in session.continue_answer()]
        await session.aclose()
    if continues:
        assert any(isinstance(e, SynthesisStarted) and e.continuation for e in events)
        assert next(e for e in events if isinstance(e, SynthesisFinished)).text == WHOLE
    else:
        assert events == [Notice("info", session.turn.continue_refusal)]
        assert session.turn.continue_refusal.startswith(refusal)
        assert fake_ollama.calls("/api/chat") == []


@pytest.mark.parametrize(("reason", "continues", "refusal"), TABLE, ids=IDS)
def test_the_cli(fake_ollama: FakeOllama, tmp_path: Path, make_settings: Callable[..., Settings],
                 reason: StopReason, continues: bool, refusal: str) -> None:
    session_id = store(make_settings(), reason)
    for args in (["ask", "--continue", "--session", str(session_id)], ["ask", "--continue"]):
        fake_ollama.script(Reply.text(REST))
        done = cli(tmp_path, fake_ollama.url, *args)
        if continues:
            assert done.returncode == 0, done.stderr
            assert done.stdout.startswith(WHOLE + "\n")
            store(make_settings(), reason)      # the next run continues a session cut the same way
        else:
            assert done.returncode == 1
            said = " ".join(done.stderr.split())
            assert refusal in said if "--session" in args else "no answer to continue" in said
            assert fake_ollama.calls("/api/chat") == []


@pytest.mark.parametrize(("reason", "continues", "refusal"), TABLE, ids=IDS)
async def test_the_tui(make_settings: Callable[..., Settings], fake_ollama: FakeOllama, reason: StopReason,
                       continues: bool, refusal: str) -> None:
    from ragtui.tui.widgets.synthesis import SynthesisView

    settings = make_settings()
    session_id = store(settings, reason)
    fake_ollama.script(Reply.text(REST))
    app = quiet_app(settings)
    async with app.run_test(size=(100, 30)) as pilot:
        view = main_screen(app).research
        await view.reopen(session_id)
        await settle(app, pilot)
        await pilot.press("tab", "c")        # out of the query bar; continue
        await settle(app, pilot)
        shown = app.query_one(SynthesisView).text
        if continues:
            assert shown == WHOLE
        else:
            assert shown == PARTIAL and fake_ollama.calls("/api/chat") == []
            assert any(n.message.lower().startswith(refusal[:40]) for n in app._notifications)   # a toast is one line

