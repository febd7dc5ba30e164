"""A damaged history.sqlite3 is one clear message and ragtui runs without history: `ask` and `query` work
(the session is not saved, and says so), `history` reports the damage and exits 1, and the file is never
written to. Run through the real CLI in subprocesses, against the fake Ollama on loopback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.history import HistoryStore
from ragtui.model.conversation import Conversation, Turn
from tests.cli_run import cli
from tests.fake_ollama import FakeOllama
from tests.tui.test_session import ingest, write_corpus


def truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def garbage(data: bytes) -> bytes:
    return bytes((i * 37 + 11) % 256 for i in range(len(data)))


async def damaged_history(tmp_path: Path, settings: Settings, damage: Callable[[bytes], bytes]) -> bytes:
    """A collection, a history holding a few sessions, then the history file damaged; its bytes."""
    await ingest(settings, write_corpus(tmp_path))
    store = HistoryStore(settings.data_dir)
    for n in range(40):
        store.save(Conversation(["docs"], {}, "chat", "chat", turns=[Turn(f"question {n} " + "x" * 500)]))
    data = damage(store.path.read_bytes())
    for leftover in store.path.parent.glob("history.sqlite3-*"):
        leftover.unlink()
    store.path.write_bytes(data)
    return data


def one_damage_line(text: str, path: Path) -> None:
    """The damage named once, with the file and what to do, and no traceback."""
    assert "Traceback" not in text
    [line] = [line for line in text.splitlines() if "is damaged" in line]
    assert f"history file {path} is damaged" in line
    assert f"mv {path} {path}.damaged" in line and "nothing in it was changed" in line


@pytest.mark.parametrize("damage", [truncated, garbage])
async def test_ask_and_query_run_without_history_and_history_commands_report_the_damage(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama,
        damage: Callable[[bytes], bytes]) -> None:
    settings = make_settings()
    data = await damaged_history(tmp_path, settings, damage)
    path = settings.data_dir / "history.sqlite3"

    asked = cli(tmp_path, fake_ollama.url, "ask", "how do pumps start", "-c", "docs")
    assert asked.returncode == 0, asked.stderr
    assert "Answer (chat" in asked.stdout and "source(s) for 'how do pumps start'" in asked.stdout
    one_damage_line(asked.stderr, path)
    assert "ragtui: warning: this session is not saved: history file" in asked.stderr
    assert "saved (" not in asked.stderr

    as_json = cli(tmp_path, fake_ollama.url, "ask", "how do pumps start", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["session"] is None and json.loads(as_json.stdout)["answer"]
    one_damage_line(as_json.stderr, path)

    queried = cli(tmp_path, fake_ollama.url, "query", "pumps start")
    assert queried.returncode == 0, queried.stderr
    assert "pumps.md" in queried.stdout and "Traceback" not in queried.stderr

    for args in (["history", "list"], ["history", "delete", "1"], ["ask", "--follow-up", "and then?"]):
        refused = cli(tmp_path, fake_ollama.url, *args)
        assert refused.returncode == 1, (args, refused.stderr)
        assert refused.stderr.startswith("ragtui: history file"), (args, refused.stderr)
        one_damage_line(refused.stderr, path)

    assert path.read_bytes() == data                              # nothing damaged is modified further
    assert sorted(p.name for p in path.parent.iterdir()) == ["collections", "history.sqlite3"]
