"""A query while WordNet's database is being written (`ragtui wordnet install` holds SQLite's write lock for the
minutes an install takes): the real CLI answers with synonyms off for that query and says so in one line; the next
query, once the lock is gone, expands again; `ragtui mcp`'s search answers the same way, not with an error."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama
from tests.mini_wordnet import LEXICON
from tests.test_mcp_protocol import Mcp

WITH_SYNONYMS = ("--set", "synonyms.enabled=true", "--set", f"synonyms.lexicon={LEXICON}")
# What an install does to readers: its transaction takes SQLite's exclusive lock once its writes outgrow the
# page cache, and holds it until the commit (https://www.sqlite.org/lockingv3.html); no one reads meanwhile.
HOLD = ("import sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('BEGIN EXCLUSIVE')\n"
        "print('locked', flush=True)\n"
        "sys.stdin.read()\n")


@contextmanager
def write_locked(database: Path) -> Iterator[None]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(database)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


def test_a_query_while_wordnet_is_written_runs_without_synonyms(tmp_path: Path, fake_ollama: FakeOllama,
                                                                mini_wordnet_file: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "garage.txt").write_text("The automobile needs new brakes before winter.")
    (docs / "kitchen.txt").write_text("Bread rises in a warm kitchen overnight.")
    assert cli(tmp_path, fake_ollama.url, *WITH_SYNONYMS, "wordnet", "install", "--from",
               str(mini_wordnet_file)).returncode == 0
    assert cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", "home").returncode == 0

    with write_locked(tmp_path / "data" / "wordnet" / "wn.db"):
        busy = cli(tmp_path, fake_ollama.url, *WITH_SYNONYMS, "query", "car", "--mode", "keyword")
    assert busy.returncode == 0, busy.stderr
    assert "Traceback" not in busy.stdout + busy.stderr and "OperationalError" not in busy.stdout + busy.stderr
    said = [line for line in (busy.stdout + busy.stderr).splitlines() if "WordNet is busy" in line]
    assert len(said) == 1 and "synonyms are off for this query" in said[0], busy.stdout + busy.stderr
    assert "garage.txt" not in busy.stdout           # "car" itself is in no document: only a synonym finds it

    free = cli(tmp_path, fake_ollama.url, *WITH_SYNONYMS, "query", "car", "--mode", "keyword")
    assert free.returncode == 0 and "garage.txt" in free.stdout and "WordNet is busy" not in free.stdout + free.stderr

    mcp = Mcp(tmp_path, fake_ollama, *WITH_SYNONYMS)        # an agent's search through `ragtui mcp`, the same
    try:
        mcp.initialize()
        with write_locked(tmp_path / "data" / "wordnet" / "wn.db"):
            mcp.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "search", "arguments": {"query": "car brakes"}}})
            result = mcp.reply()["result"]
        assert not result["isError"], result
        found = result["structuredContent"]
        assert [n for n in found["notices"] if "WordNet is busy" in n and "synonyms are off" in n], found
    finally:
        assert mcp.process.stdin is not None
        mcp.process.stdin.close()
        mcp.process.wait(timeout=60)
