"""A damaged history.sqlite3, or one that cannot be written (a folder in its place, a full disk before the
first session), is one clear message and ragtui runs without history: `ask` and `query` work (the session is
not saved, and says so), `history` reports why and exits 1, and the file is never written to. Run through
the real CLI in subprocesses, against the fake Ollama on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.history import HistoryStore
from ragtui.model.conversation import Conversation, Turn
from tests.cli_run import ROOT, cli
from tests.fake_ollama import FakeOllama
from tests.ingest.test_full_disk import namespace_prefix
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


def one_unwritable_line(text: str, path: Path, hint: str) -> None:
    """The unwritable file named once, with why and what to do, and no traceback."""
    assert "Traceback" not in text
    [line] = [line for line in text.splitlines() if "cannot be written" in line]
    assert f"history file {path} cannot be written (" in line and hint in line, line


async def test_a_folder_where_the_history_file_belongs_leaves_ask_answering_unsaved(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    await ingest(settings, write_corpus(tmp_path))
    path = settings.data_dir / "history.sqlite3"
    path.mkdir()
    hint = "a folder stands where the file belongs"

    asked = cli(tmp_path, fake_ollama.url, "ask", "how do pumps start", "-c", "docs")
    assert asked.returncode == 0, asked.stderr
    assert "Answer (chat" in asked.stdout and "source(s) for 'how do pumps start'" in asked.stdout
    one_unwritable_line(asked.stderr, path, hint)
    assert "ragtui: warning: this session is not saved: history file" in asked.stderr

    for args in (["history", "list"], ["history", "show", "1"], ["history", "export", "1"]):
        refused = cli(tmp_path, fake_ollama.url, *args)
        assert refused.returncode == 1, (args, refused.stderr)
        assert refused.stderr.startswith("ragtui: history file"), (args, refused.stderr)
        one_unwritable_line(refused.stderr, path, hint)
    assert path.is_dir() and not any(path.iterdir())


FULL_DISK = """
mount -t tmpfs -o size=1m tmpfs "$DATA" || exit 97
mkdir "$DATA/collections" && mount -t tmpfs -o size=64m tmpfs "$DATA/collections" || exit 96
"$PY" -m ragtui --data-dir "$DATA" --ollama-host "$HOST" --set synonyms.enabled=false --set llm.model=chat \
    ingest "$CORPUS" -c docs > "$OUT/ingest.out" 2> "$OUT/ingest.err" || exit 98
dd if=/dev/zero of="$DATA/filler" bs=64k 2> /dev/null
ls -a "$DATA" > "$OUT/listed"
"$PY" -m ragtui --data-dir "$DATA" --ollama-host "$HOST" --set synonyms.enabled=false --set llm.model=chat \
    ask "how do pumps start" -c docs > "$OUT/ask.out" 2> "$OUT/ask.err"
echo $? > "$OUT/ask.rc"
"""


def test_a_full_disk_before_the_first_session_leaves_ask_answering_unsaved(tmp_path: Path,
                                                                           fake_ollama: FakeOllama) -> None:
    """No history file yet and no room to create one: a real full filesystem, a small tmpfs mounted in a
    private mount namespace (`unshare`), so nothing outside the test sees it. The collections have a tmpfs of
    their own, with room: the collection stays readable, only the history cannot be created."""
    data = tmp_path / "data"
    data.mkdir()
    prefix = namespace_prefix(data)
    if prefix is None:
        pytest.skip("no mount namespace here (unshare refused): a small tmpfs cannot be mounted")
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home"), "DATA": str(data),
           "PY": sys.executable, "HOST": fake_ollama.url, "CORPUS": str(write_corpus(tmp_path)), "OUT": str(out)}
    done = subprocess.run([*prefix, "sh", "-c", FULL_DISK], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, (done.returncode, done.stderr, (out / "ingest.err").read_text()
                                  if (out / "ingest.err").exists() else "")
    assert "history.sqlite3" not in (out / "listed").read_text()        # no history file before the ask
    err = (out / "ask.err").read_text()
    assert (out / "ask.rc").read_text().strip() == "0", err
    assert "Answer (chat" in (out / "ask.out").read_text()
    one_unwritable_line(err, data / "history.sqlite3", "free space on the disk holding")
    assert "ragtui: warning: this session is not saved: history file" in err
