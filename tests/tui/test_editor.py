"""$VISUAL / $EDITOR from the TUI, with a fake editor that is a real program: a long question written there,
the answer opened there, and every way an editor can be missing or fail said in one notice."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtui.tui.widgets.query import QueryInput
from ragtui.tui.widgets.sources import SourcesPanel
from tests.tui.conftest import feed, quiet_app
from tests.tui.fake_editor import fake_editor
from tests.tui.scripted import finished_session

QUESTION = "Which pumps need priming?\n\nAnd what changes in winter, when the pipes are cold?"


async def test_ctrl_g_writes_the_question_in_the_editor_and_asks_it(snapshot_settings, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISUAL", str(fake_editor(tmp_path, "visual", writes=QUESTION + "\n")))
    monkeypatch.setenv("EDITOR", str(fake_editor(tmp_path, "editor", status=1)))    # $VISUAL comes first
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, [])
        bar = app.query_one(QueryInput)
        bar.focus()
        await pilot.press(*"pumps", "ctrl+g")         # from the query bar, while typing
        await pilot.pause()
        assert (tmp_path / "visual.seen").read_text(encoding="utf-8") == "pumps"
        assert not (tmp_path / "editor.seen").exists()
        assert bar.past[-1] == QUESTION              # asked with its paragraphs
        assert bar.value == " ".join(QUESTION.split())
        await app.workers.wait_for_complete()


@pytest.mark.parametrize(("editor", "said"), [
    (None, "No editor: set $VISUAL or $EDITOR"),
    ("/nonexistent/editor", "could not start"),
    ("failing", "exited with status 3; nothing was read back"),
    ("emptying", "The edited question is empty: nothing asked."),
])
async def test_a_missing_or_failing_editor_is_one_notice_and_asks_nothing(
        snapshot_settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, editor: str | None, said: str) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    if editor == "failing":
        editor = str(fake_editor(tmp_path, "failing", writes="half a question", status=3))
    elif editor == "emptying":
        editor = str(fake_editor(tmp_path, "emptying", writes="  \n\n"))
    if editor is not None:
        monkeypatch.setenv("EDITOR", editor)
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, [])
        bar = app.query_one(QueryInput)
        bar.focus()
        before = len(app.notices)
        await pilot.press(*"pumps", "ctrl+g")
        await pilot.pause()
        notices = [n.message for n in app.notices[before:]]
        assert len(notices) == 1 and said in notices[0], notices
        assert bar.past == [] and bar.value == "pumps"


async def test_o_opens_the_answer_with_its_sources_in_the_editor(snapshot_settings, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISUAL", str(fake_editor(tmp_path, "reader", writes="changed in the editor")))
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, finished_session())
        app.query_one(SourcesPanel).active_table.focus()
        answer = app.query_one("#synthesis").text
        await pilot.press("o")
        await pilot.pause()
        seen = (tmp_path / "reader.seen").read_text(encoding="utf-8")
        assert seen.startswith(answer.rstrip()) and "\nSources:\n[1] " in seen
        assert app.query_one("#synthesis").text == answer       # what the editor changed is not read back
