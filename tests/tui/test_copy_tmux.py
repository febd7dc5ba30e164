"""Copying inside tmux: the OSC 52 forms sent follow what the running tmux answers (a fake `tmux` on PATH),
and the answer is copied with the numbered list of the sources it cites."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ragtui.tui.clipboard import TmuxClipboard, ask_tmux, clipboard_sequences, osc52
from ragtui.tui.widgets.sources import SourcesPanel
from tests.tui.conftest import feed, quiet_app
from tests.tui.scripted import ANSWER, finished_session

PLAIN = osc52("hi", in_tmux=False)
WRAPPED = osc52("hi", in_tmux=True)


def fake_tmux(folder: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, str] | None) -> None:
    """A `tmux` first on PATH answering `show-options -gv NAME` from `options` (None: a tmux that fails);
    an option it lacks fails as an unknown option does."""
    folder.mkdir(exist_ok=True)
    script = folder / "tmux"
    if options is None:
        body = "echo 'no server running' >&2; exit 1\n"
    else:
        cases = "".join(f"  {name}) echo {value} ;;\n" for name, value in options.items())
        body = f'case "$3" in\n{cases}  *) echo "invalid option: $3" >&2; exit 1 ;;\nesac\n'
    script.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize(("options", "sent"), [
    ({"set-clipboard": "on", "allow-passthrough": "off"}, PLAIN),             # the common set-up
    ({"set-clipboard": "external", "allow-passthrough": "on"}, WRAPPED),
    ({"set-clipboard": "on", "allow-passthrough": "all"}, PLAIN + WRAPPED),
    ({"set-clipboard": "off", "allow-passthrough": "off"}, ""),              # tmux passes none
    ({"set-clipboard": "external"}, WRAPPED),                                # tmux < 3.3: passthrough always
    (None, PLAIN + WRAPPED),                                                  # tmux does not answer: both
])
def test_the_forms_sent_follow_tmux_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            options: dict[str, str] | None, sent: str) -> None:
    fake_tmux(tmp_path / "bin", monkeypatch, options)
    assert clipboard_sequences("hi", ask_tmux()) == sent


def test_outside_tmux_the_plain_form() -> None:
    assert clipboard_sequences("hi", None) == PLAIN
    assert TmuxClipboard(None, None).plain and TmuxClipboard(None, None).wrapped


async def test_y_in_tmux_sends_what_tmux_takes_and_says_where_the_file_is(
        snapshot_settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_tmux(tmp_path / "bin", monkeypatch, {"set-clipboard": "on", "allow-passthrough": "off"})
    settings = snapshot_settings()
    app = quiet_app(settings, in_tmux=True)
    async with app.run_test(size=(100, 30)) as pilot:
        written: list[str] = []
        assert app._driver is not None
        monkeypatch.setattr(app._driver, "write", written.append)   # what reaches the terminal
        await feed(app, finished_session())
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("y")
        copied = (settings.data_dir / "clipboard.md").read_text(encoding="utf-8")
        assert copied == app.clipboard
        assert copied.startswith(ANSWER)
        assert copied.endswith("Sources:\n[1] demo/darwin/origin-of-species.pdf [p.12]\n"
                               "[2] demo/notes/selection.md\n[3] demo/darwin/origin-of-species.pdf [p.40]\n")
        assert written == [osc52(copied, in_tmux=False)]             # plain only: passthrough is off
        message = app.notices[-1].message
        assert "set-clipboard on" in message and f"written to {settings.data_dir / 'clipboard.md'}" in message

        fake_tmux(tmp_path / "bin", monkeypatch, {"set-clipboard": "off", "allow-passthrough": "off"})
        await pilot.press("Y")
        assert len(written) == 1                                     # nothing tmux would drop
        assert app.notices[-1].message.startswith("Not sent to the clipboard")
        assert app.notices[-1].severity == "warning"
