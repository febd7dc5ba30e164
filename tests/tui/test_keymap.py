"""The [keys] table: a user's keys bound, shown by `?` and the palette, and checked before the app starts;
config.toml's [keys] kept in step with the keymap (the docs' key tables: tests/test_docs.py)."""

from __future__ import annotations

import dataclasses
import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from textual.command import CommandPalette

from ragtui.config import load_settings
from ragtui.config_sections import KeysSettings
from ragtui.tui.commands import RagtuiCommands
from ragtui.tui.keymap import ACTIONS, key_display, parse_keys
from ragtui.tui.screens.help import HelpScreen, keys_table
from ragtui.tui.widgets.sources import SourcesPanel
from tests.cli_run import cli
from tests.tui.conftest import feed, quiet_app
from tests.tui.scripted import finished_session


async def test_a_users_keys_are_bound_and_the_defaults_they_replace_are_not(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings("keys.help=f1", "keys.history=H, ctrl+h"))
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, finished_session())
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("question_mark")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)         # ? no longer opens the help
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        console = Console(width=100, record=True, file=io.StringIO())
        console.print(keys_table(app.screen.keys))
        shown = console.export_text()
        assert re.search(r"^ *f1 +Show all keys", shown, re.M)
        assert re.search(r"^ *H / ctrl\+h +Browse past", shown, re.M)
        await pilot.press("question_mark")         # not the help key any more: the help stays
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("f1")                    # the help key closes it, as ? did
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_the_palette_names_each_action_with_the_users_keys(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings("keys.copy_answer=ctrl+y"))
    async with app.run_test(size=(100, 30)) as pilot:
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.pause()
        provider = RagtuiCommands(app.screen)
        names = [str(hit.text) async for hit in provider.search("copy the answer")]
        assert "Copy (ctrl+y)" in names
        app.action_command_palette()
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)


@pytest.mark.parametrize(("entry", "said"), [
    ("help = \"hyper+x\"", "keys.help = 'hyper+x'"),
    ("help = \"ctrl+\"", "a modifier without a key"),
    ("help = \"nope\"", "unknown key 'nope'"),
    ("help = \"\"", "keys.help = ''"),
    ("fly = \"f\"", "unknown key keys.fly"),
    ("help = \"s\"", "keys.synthesize and keys.help both use s"),
    ("history = \"j\"", "j is kept by the lists and panes"),
])
def test_a_bad_keys_entry_is_one_config_error_line_and_exit_2(tmp_path: Path, entry: str, said: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[keys]\n{entry}\n", encoding="utf-8")
    run = cli(tmp_path, "http://127.0.0.1:9", "--config", str(config))
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragtui: config error:") and said in lines[0], run.stderr


def test_keys_are_read_as_a_user_writes_them() -> None:
    assert parse_keys("?") == ("question_mark",)
    assert parse_keys("f1, ctrl+H") == ("f1", "ctrl+h")
    assert parse_keys("esc") == ("escape",)
    assert parse_keys("G") == ("G",)
    assert parse_keys("ctrl++") == ("ctrl+plus",)
    assert [key_display(k) for k in parse_keys("[, ctrl+r, escape")] == ["[", "ctrl+r", "esc"]


def test_config_toml_names_every_action_with_its_default_key(tmp_path: Path) -> None:
    settings = load_settings(user_file=tmp_path / "none.toml", env={})
    assert [f.name for f in dataclasses.fields(KeysSettings)] == [a.id for a in ACTIONS]
    for action in ACTIONS:
        assert parse_keys(getattr(settings.keys, action.id)) == (action.key,), action.id
