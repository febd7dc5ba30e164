"""Damaged files stay local: one collection's broken manifest or records never hide the others, and it can
still be deleted. Run through the real CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_ollama import FakeOllama

ROOT = Path(__file__).resolve().parents[1]


def cli(tmp_path: Path, host: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-m", "ragtui", "--data-dir", str(tmp_path / "data"), "--ollama-host",
                           host, "--set", "synonyms.enabled=false", *args],
                          capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize(("file", "damage"), [
    ("collection.json", b'{"name": "bad", "top'),                       # truncated
    ("collection.json", b"\xff\xfe garbage"),
    ("records.sqlite3", b"SQLite format 3\x00" + b"\x07" * 300),      # a garbage header
])
def test_a_damaged_collection_is_listed_as_damaged_and_can_be_deleted(tmp_path: Path, fake_ollama: FakeOllama,
                                                                      file: str, damage: bytes) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The float valve refills the tank after each flush. " * 5)
    for name in ("good", "bad"):
        assert cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", name).returncode == 0
    target = tmp_path / "data" / "collections" / "bad" / file
    target.write_bytes(damage)
    listed = cli(tmp_path, fake_ollama.url, "collections", "list")
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    [good] = [line for line in listed.stdout.splitlines() if line.startswith("good ")]
    assert "ready" in good
    [bad] = [line for line in listed.stdout.splitlines() if line.startswith("bad ") and " is damaged" not in line]
    assert "damaged" in bad
    [why] = [line for line in listed.stdout.splitlines() if line.startswith("bad is damaged:")]
    assert str(target) in why
    assert target.read_bytes() == damage                               # nothing damaged is modified further
    deleted = cli(tmp_path, fake_ollama.url, "collections", "delete", "bad", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert not target.parent.exists()
    assert "bad" not in cli(tmp_path, fake_ollama.url, "collections", "list").stdout
