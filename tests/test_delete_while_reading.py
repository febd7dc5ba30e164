"""A collection deleted by another process while a query reads it: the query says so in one line and still
answers from the other collections (real processes: a `ragtui query` and a `ragtui collections delete`)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

from tests.cli_run import cli, command
from tests.fake_ollama import FakeOllama

TEXT = "The float valve refills the cistern after each flush until the float rises. " * 4


def _two_collections(tmp_path: Path, fake_ollama: FakeOllama, *extra: tuple[str, str]) -> None:
    """The same folder ingested as `kept` and as `doomed`."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "valve.txt").write_text(TEXT)
    for name, text in extra:
        (docs / name).write_text(text)
    for name in ("kept", "doomed"):
        assert cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", name).returncode == 0


def _start_query(tmp_path: Path, fake_ollama: FakeOllama) -> subprocess.Popen[str]:
    """A fresh `ragtui query --json` over both collections, as a user starts it."""
    argv, env = command(tmp_path, fake_ollama.url, "query", "float valve cistern", "-c", "kept", "-c", "doomed",
                        "--json")
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _answered_from_kept(reader: subprocess.Popen[str], out: str, err: str) -> list[str]:
    """The query ended well, with no traceback, its hits all from `kept`: its notices."""
    assert reader.returncode == 0, err
    assert "Traceback" not in err
    result = json.loads(out)
    assert {hit["collection"] for hit in result["nodes"]} == {"kept"}
    notices: list[str] = result["notices"]
    return notices


def test_a_query_over_a_collection_deleted_meanwhile_answers_from_the_others(tmp_path: Path,
                                                                             fake_ollama: FakeOllama) -> None:
    _two_collections(tmp_path, fake_ollama,
                     ("pump.txt", "A centrifugal pump spins an impeller inside its casing. " * 4))
    gate = fake_ollama.embed_gate = threading.Event()     # the query waits for its embedding, stores open
    embeds = len(fake_ollama.calls("/api/embed"))
    reader = _start_query(tmp_path, fake_ollama)
    try:
        deadline = time.monotonic() + 60
        while len(fake_ollama.calls("/api/embed")) == embeds and reader.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(fake_ollama.calls("/api/embed")) > embeds, "the query never asked for its embedding"
        deleted = cli(tmp_path, fake_ollama.url, "collections", "delete", "doomed", "--yes")
        assert deleted.returncode == 0, deleted.stderr
    finally:
        gate.set()
        out, err = reader.communicate(timeout=120)
    notices = _answered_from_kept(reader, out, err)
    assert any("collection doomed was deleted while this query ran" in n for n in notices), notices
    assert not (tmp_path / "data" / "collections" / "doomed").exists()     # the reader recreated nothing


def _holds_open(pid: int, folder: Path) -> bool:
    """Whether process `pid` has a file under `folder` open (its /proc/PID/fd links)."""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:                      # the process ended, or an fd closed while being read
        return False
    return any(link.startswith(f"{folder}/") for link in links)


def test_a_collection_deleted_while_a_fresh_query_starts_up_is_one_notice(tmp_path: Path,
                                                                         fake_ollama: FakeOllama) -> None:
    """The delete lands once a fresh `ragtui query` has opened the collection's stores (prepare_soon) and while it
    is still importing the rest of the engine, before it reads which models the collection has vectors of."""
    _two_collections(tmp_path, fake_ollama)
    doomed = tmp_path / "data" / "collections" / "doomed"
    embeds = len(fake_ollama.calls("/api/embed"))
    reader = _start_query(tmp_path, fake_ollama)
    try:
        deadline = time.monotonic() + 60
        while not _holds_open(reader.pid, doomed) and reader.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _holds_open(reader.pid, doomed), "the query never opened the collection's stores"
        assert len(fake_ollama.calls("/api/embed")) == embeds, "the query had read its collections' models already"
        deleted = cli(tmp_path, fake_ollama.url, "collections", "delete", "doomed", "--yes")
        assert deleted.returncode == 0, deleted.stderr
    finally:
        out, err = reader.communicate(timeout=120)
    assert "collection doomed was deleted while this query ran; it was not searched." in _answered_from_kept(
        reader, out, err)
    assert not doomed.exists()
