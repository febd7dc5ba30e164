"""A collection deleted by another process while a query reads it: the query says so in one line and still
answers from the other collections (real processes: a `ragtui query` and a `ragtui collections delete`)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

from tests.cli_run import cli, command
from tests.fake_ollama import FakeOllama

TEXT = "The float valve refills the cistern after each flush until the float rises. " * 4


def test_a_query_over_a_collection_deleted_meanwhile_answers_from_the_others(tmp_path: Path,
                                                                             fake_ollama: FakeOllama) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "valve.txt").write_text(TEXT)
    (docs / "pump.txt").write_text("A centrifugal pump spins an impeller inside its casing. " * 4)
    for name in ("kept", "doomed"):
        assert cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", name).returncode == 0
    gate = fake_ollama.embed_gate = threading.Event()     # the query waits for its embedding, stores open
    embeds = len(fake_ollama.calls("/api/embed"))
    argv, env = command(tmp_path, fake_ollama.url, "query", "float valve cistern", "-c", "kept", "-c", "doomed",
                        "--json")
    reader = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
    assert reader.returncode == 0, err
    assert "Traceback" not in err
    result = json.loads(out)
    assert {hit["collection"] for hit in result["nodes"]} == {"kept"}
    assert any("collection doomed was deleted while this query ran" in n for n in result["notices"]), result["notices"]
    assert not (tmp_path / "data" / "collections" / "doomed").exists()     # the reader recreated nothing
