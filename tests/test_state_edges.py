"""State edges found by the adversarial pass (issue 10): each reproduced through the real CLI in a
subprocess against the fake Ollama on loopback, with real files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_run import ROOT, cli
from tests.fake_ollama import FakeOllama
from tests.signals import default_sigint
from tests.tui.test_session import write_corpus


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path)


def test_a_slow_api_show_names_the_setting_that_controls_its_timeout(tmp_path: Path, fake_ollama: FakeOllama,
                                                                    corpus: Path) -> None:
    assert cli(tmp_path, fake_ollama.url, "ingest", str(corpus), "-c", "docs").returncode == 0
    fake_ollama.show_delay = 3.0
    done = cli(tmp_path, fake_ollama.url, "--set", "ollama.timeout=0.5", "ask", "how do pumps start")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "pumps.md" in done.stdout                                   # retrieval still ran
    assert (f"Ollama at {fake_ollama.url} did not answer /api/show for chat within 0.5 s (ollama.timeout)"
            in done.stderr)


def test_an_ingest_refused_by_the_lock_leaves_the_topic_alone(tmp_path: Path, fake_ollama: FakeOllama,
                                                              corpus: Path) -> None:
    from ragtui.config import load_settings
    from ragtui.library import CollectionRegistry

    first = cli(tmp_path, fake_ollama.url, "ingest", str(corpus), "-c", "docs", "--topic", "pumps")
    assert first.returncode == 0, first.stderr
    settings = load_settings(user_file=tmp_path / "none.toml", env={},
                             overrides=[f"storage.data_dir={tmp_path / 'data'}"])
    collection = CollectionRegistry(settings).open("docs")
    manifest = (collection.path / "collection.json").read_bytes()
    with collection.ingest_lock():                                   # another ingest is writing
        refused = cli(tmp_path, fake_ollama.url, "ingest", str(corpus), "-c", "docs", "--topic", "cafeteria")
    assert refused.returncode == 1 and "another ingest is writing into collection 'docs'" in refused.stderr
    assert (collection.path / "collection.json").read_bytes() == manifest
    retitled = cli(tmp_path, fake_ollama.url, "ingest", str(corpus), "-c", "docs", "--topic", "cafeteria")
    assert retitled.returncode == 0, retitled.stderr
    assert CollectionRegistry(settings).open("docs").topic == "cafeteria"


def test_a_lock_held_for_a_moment_is_waited_out_and_one_held_on_is_refused(tmp_path: Path) -> None:
    """Another process's `held` probe (the TUI polls every collection's locks) takes the lock for an instant; an
    ingest starting in that instant waits it out instead of saying another ingest is writing."""
    import fcntl
    import threading

    from ragtui.library import IngestBusy, _flocked

    path = tmp_path / "ingest.lock"
    with open(path, "a+") as probe:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        threading.Timer(0.01, fcntl.flock, (probe, fcntl.LOCK_UN)).start()
        with _flocked(path, "busy"):
            pass
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)                # held on: refused after the short waits
        with pytest.raises(IngestBusy), _flocked(path, "busy"):
            pass


def test_sync_after_the_folder_was_renamed_removes_the_files_that_are_gone(tmp_path: Path,
                                                                          fake_ollama: FakeOllama) -> None:
    from ragtui.config import load_settings
    from ragtui.library import CollectionRegistry

    old, other = tmp_path / "manuals", tmp_path / "notes"
    for folder, words in ((old, ("impeller", "gasket", "bearing")), (other, ("rotor", "stator"))):
        folder.mkdir()
        for word in words:
            (folder / f"{word}.txt").write_text(f"The {word} of the pump is checked every week. " * 3)
    for folder in (old, other):
        assert cli(tmp_path, fake_ollama.url, "ingest", str(folder), "-c", "docs").returncode == 0
    new = tmp_path / "manuals-2024"
    old.rename(new)                                          # the folder is renamed ...
    (new / "gasket.txt").unlink()                            # ... and a file deleted from it
    (other / "rotor.txt").unlink()                           # a file gone from another folder: not this sync's
    synced = cli(tmp_path, fake_ollama.url, "ingest", str(new), "-c", "docs", "--sync")
    assert synced.returncode == 0, synced.stderr
    assert "0 added, 0 updated, 2 unchanged, 1 removed" in synced.stdout
    settings = load_settings(user_file=tmp_path / "none.toml", env={},
                             overrides=[f"storage.data_dir={tmp_path / 'data'}"])
    records = CollectionRegistry(settings).open("docs").records
    assert {(r.source, r.root) for r in records.files()} == {
        ("impeller.txt", str(new)), ("bearing.txt", str(new)),          # the renamed folder's files, moved
        ("rotor.txt", str(other)), ("stator.txt", str(other))}
    found = cli(tmp_path, fake_ollama.url, "query", "gasket", "--mode", "keyword")
    assert "gasket.txt" not in found.stdout
    again = cli(tmp_path, fake_ollama.url, "ingest", str(other), "-c", "docs", "--sync")
    assert "0 added, 0 updated, 1 unchanged, 1 removed" in again.stdout


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_a_killed_eval_leaves_no_collection_that_queries_search(tmp_path: Path, fake_ollama: FakeOllama,
                                                                corpus: Path, sig: signal.Signals) -> None:
    from tests.test_query_eval_cli import write_beir

    assert cli(tmp_path, fake_ollama.url, "ingest", str(corpus), "-c", "docs").returncode == 0
    dataset = write_beir(tmp_path / "mini")
    fake_ollama.embed_delay = 2.0                                   # the eval's ingest is under way for a while
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([sys.executable, "-m", "ragtui", "--data-dir", str(tmp_path / "data"), "--ollama-host",
                             fake_ollama.url, "eval", "--dataset", str(dataset)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    eval_root = tmp_path / "data" / "eval" / "collections"
    for _ in range(600):                                            # until its collection exists, mid-ingest
        if list((tmp_path / "data").rglob("eval-*/records.sqlite3")) and fake_ollama.calls("/api/embed"):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the eval never started its ingest")
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")
    fake_ollama.embed_delay = 0.0
    listed = cli(tmp_path, fake_ollama.url, "collections", "list")
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:] if line.strip()] == ["docs"]
    found = cli(tmp_path, fake_ollama.url, "query", "turbine blade cooling", "--json")
    assert found.returncode == 0 and list(json.loads(found.stdout)["retrieval_meta"]["collections"]) == ["docs"]
    again = cli(tmp_path, fake_ollama.url, "eval", "--dataset", str(dataset), "--modes", "keyword")
    assert again.returncode == 0, again.stderr
    assert not list(eval_root.iterdir())                             # the killed run's collection is gone too
