"""`ragtui collections remove NAME PATH...` drops files from every store of a collection (records, keyword index,
vectors), named as the collection lists them or as paths on disk, and refuses a path it does not hold without
changing anything; `ragtui collections rebuild-keyword NAME` builds the keyword index again from the records, also
when it was damaged, while a reader that had it open refreshes onto the new one. Through the real CLI."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama

DOCS = {
    "valve.txt": "The float valve refills the cistern after each flush until the float rises. " * 4,
    "pump.txt": "A centrifugal pump moves water by spinning an impeller inside its casing. " * 4,
    "attic/roof.txt": "Clay tiles on a pitched roof shed rain into the gutters along the eaves. " * 4,
    "attic/lamp.txt": "An oil lamp burns paraffin drawn up through a cotton wick in the attic. " * 4,
}


def ingested(tmp_path: Path, fake: FakeOllama) -> Path:
    folder = tmp_path / "docs"
    for name, text in DOCS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    done = cli(tmp_path, fake.url, "ingest", str(folder), "-c", "c")
    assert done.returncode == 0, done.stderr
    return folder


def sources(tmp_path: Path, fake: FakeOllama, question: str, mode: str) -> set[str]:
    done = cli(tmp_path, fake.url, "query", question, "-c", "c", "--mode", mode, "--json")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return {n["source"] for n in result["nodes"]}


def stored(tmp_path: Path) -> dict[str, Any]:
    """What each store of collection c holds: the records' files, the vectors' files (read from Chroma's SQLite)."""
    collection = tmp_path / "data" / "collections" / "c"
    records = sqlite3.connect(collection / "records.sqlite3")
    chroma = sqlite3.connect(f"file:{collection / 'chroma' / 'chroma.sqlite3'}?mode=ro", uri=True)
    try:
        return {"records": {r[0] for r in records.execute("SELECT DISTINCT source FROM chunks")},
                "vectors": {r[0] for r in chroma.execute(
                    "SELECT string_value FROM embedding_metadata WHERE key = 'source'")}}
    finally:
        records.close()
        chroma.close()


def test_remove_drops_files_from_every_store_and_refuses_what_it_does_not_hold(tmp_path: Path,
                                                                               fake_ollama: FakeOllama) -> None:
    folder = ingested(tmp_path, fake_ollama)
    assert "valve.txt" in sources(tmp_path, fake_ollama, "float valve cistern", "keyword")

    refused = cli(tmp_path, fake_ollama.url, "collections", "remove", "c", "valve.txt", "nothing/here.txt")
    assert refused.returncode == 2 and "not in collection c: nothing/here.txt" in refused.stderr
    assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) <= 2
    assert stored(tmp_path)["records"] == set(DOCS)                 # nothing removed

    done = cli(tmp_path, fake_ollama.url, "collections", "remove", "c", "valve.txt", str(folder / "attic"))
    assert done.returncode == 0, done.stderr
    assert {line for line in done.stdout.splitlines() if line.startswith("removed ")} == \
        {"removed valve.txt", "removed attic/roof.txt", "removed attic/lamp.txt"}
    assert stored(tmp_path) == {"records": {"pump.txt"}, "vectors": {"pump.txt"}}
    for mode in ("keyword", "vector"):
        assert sources(tmp_path, fake_ollama, "float valve cistern clay tiles roof", mode) <= {"pump.txt"}
    listed = json.loads(cli(tmp_path, fake_ollama.url, "collections", "list", "--json").stdout)
    assert (listed[0]["files"], listed[0]["state"]) == (1, "ready")

    again = cli(tmp_path, fake_ollama.url, "ingest", str(folder), "-c", "c")      # the files are still on disk
    assert again.returncode == 0 and "3 added" in again.stdout


def test_rebuild_keyword_restores_a_damaged_index_and_a_reader_moves_onto_the_new_one(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    from ragtui.stores.keyword import KeywordIndex

    ingested(tmp_path, fake_ollama)
    whoosh = tmp_path / "data" / "collections" / "c" / "whoosh"
    reader = KeywordIndex(whoosh)                        # a reader holding the index open, as a query process
    before = {c.id: c.text for c in reader.get(sorted(reader.ids()))}
    old_segments = {p.name for p in whoosh.glob("MAIN_*.seg")}

    done = cli(tmp_path, fake_ollama.url, "collections", "rebuild-keyword", "c")
    assert done.returncode == 0, done.stderr
    assert f"{len(DOCS)} chunks" in done.stdout
    assert {p.name for p in whoosh.glob("MAIN_*.seg")}.isdisjoint(old_segments)
    assert {c.id: c.text for c in reader.get(sorted(before))} == before       # refreshed onto the new generation
    assert reader.cached_segments().isdisjoint({name.removesuffix(".seg") for name in old_segments})
    reader.close()

    for segment in whoosh.glob("MAIN_*.seg"):            # the keyword index damaged
        segment.write_bytes(segment.read_bytes()[:64])
    broken = cli(tmp_path, fake_ollama.url, "query", "float valve cistern", "-c", "c", "--mode", "keyword", "--json")
    assert "valve.txt" not in broken.stdout
    fixed = cli(tmp_path, fake_ollama.url, "collections", "rebuild-keyword", "c")
    assert fixed.returncode == 0, fixed.stderr
    assert sources(tmp_path, fake_ollama, "float valve cistern", "keyword") == {"valve.txt"}


def test_rebuild_keyword_replaces_an_index_whose_table_of_contents_is_gone(tmp_path: Path,
                                                                           fake_ollama: FakeOllama) -> None:
    ingested(tmp_path, fake_ollama)
    whoosh = tmp_path / "data" / "collections" / "c" / "whoosh"
    for toc in whoosh.glob("_MAIN_*.toc"):
        toc.unlink()
    listed = json.loads(cli(tmp_path, fake_ollama.url, "collections", "list", "--json").stdout)
    assert listed[0]["damaged"]
    fixed = cli(tmp_path, fake_ollama.url, "collections", "rebuild-keyword", "c")
    assert fixed.returncode == 0, fixed.stderr
    assert f"{len(DOCS)} chunks" in fixed.stdout
    assert sources(tmp_path, fake_ollama, "float valve cistern", "keyword") == {"valve.txt"}
    listed = json.loads(cli(tmp_path, fake_ollama.url, "collections", "list", "--json").stdout)
    assert not listed[0]["damaged"] and listed[0]["state"] == "ready"
