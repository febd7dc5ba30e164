"""Damaged files stay local: one collection's broken manifest, records, keyword index or vector store, or a link in
place of its folder, never hides the others, never stops a query or an answer over the others, an ingest into
the damaged collection is refused in one line, and the damaged collection can still be inspected and deleted.
Run through the real CLI in a subprocess, on files corrupted on disk."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama

DOCS = {
    "valve.txt": "The float valve refills the cistern after each flush until the float rises. " * 4,
    "pump.txt": "A centrifugal pump moves water by spinning an impeller inside its casing. " * 4,
    "roof.txt": "Clay tiles on a pitched roof shed rain into the gutters along the eaves. " * 4,
    "lamp.txt": "An oil lamp burns paraffin drawn up through a cotton wick to the flame. " * 4,
}
BAD_VALVE = "In the cistern a float valve shuts the inlet once the float has risen far enough. " * 4


def _garbage_toc(folder: Path) -> Path:
    [toc] = (folder / "whoosh").glob("*.toc")
    toc.write_bytes(b"garbage" * 10)
    return folder / "whoosh"          # the keyword index is named by its folder


def _no_toc(folder: Path) -> Path:
    [toc] = (folder / "whoosh").glob("*.toc")
    toc.unlink()
    return folder / "whoosh"


def _write(name: str, data: bytes) -> Callable[[Path], Path]:
    def damage(folder: Path) -> Path:
        (folder / name).write_bytes(data)
        return folder / name
    return damage


def _link_outside(folder: Path) -> Path:
    outside = folder.parents[2] / "elsewhere"
    shutil.move(folder, outside)
    folder.symlink_to(outside, target_is_directory=True)
    return folder


DAMAGES = {
    "keyword index": _garbage_toc,
    "keyword index without its table of contents": _no_toc,
    "truncated manifest": _write("collection.json", b'{"name": "bad", "top'),
    "undecodable manifest": _write("collection.json", b"\xff\xfe garbage"),
    "manifest not an object": _write("collection.json", b"[1, 2]"),
    "records": _write("records.sqlite3", b"SQLite format 3\x00" + b"\x07" * 300),
    "vector store": _write("chroma/chroma.sqlite3", b"SQLite format 3\x00" + b"\x07" * 300),
    "link out of the data dir": _link_outside,
}


def _contents(damaged: Path) -> dict[Path, bytes]:
    files = [damaged] if damaged.is_file() else [p for p in damaged.rglob("*") if p.is_file()]
    return {p: p.read_bytes() for p in files}


# Damage that leaves a collection searchable, and what its notice says it lost.
STILL_ANSWERS = {"vector store": "keyword matches only", "records": "retrieve.max_per_file"}


@pytest.fixture(scope="module")
def two_collections_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Collections `good` and `bad` of four files each, their valve files worded differently (identical passages
    would be one hit: retrieval drops duplicates across collections), ingested once for the module through the
    CLI; returns the data dir, which each test copies before damaging it."""
    base = tmp_path_factory.mktemp("two-collections")
    server = FakeOllama().start()
    try:
        for name, valve in (("good", DOCS["valve.txt"]), ("bad", BAD_VALVE)):
            docs = base / f"docs-{name}"
            docs.mkdir()
            for file, text in {**DOCS, "valve.txt": valve}.items():
                (docs / file).write_text(text)
            done = cli(base, server.url, "ingest", str(docs), "-c", name)
            assert done.returncode == 0, done.stderr
    finally:
        server.stop()
    return base / "data"


@pytest.fixture
def two_collections(tmp_path: Path, two_collections_built: Path) -> Path:
    """This test's copy of the two collections; returns bad's folder."""
    shutil.copytree(two_collections_built, tmp_path / "data", symlinks=True)
    return tmp_path / "data" / "collections" / "bad"


@pytest.mark.parametrize("kind", list(DAMAGES))
def test_a_damaged_collection_is_listed_inspected_left_out_of_queries_and_deleted(
        tmp_path: Path, fake_ollama: FakeOllama, two_collections: Path, kind: str) -> None:
    bad = two_collections
    damaged = DAMAGES[kind](bad)
    before = _contents(damaged)

    listed = cli(tmp_path, fake_ollama.url, "collections", "list")
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    [good_row] = [line for line in listed.stdout.splitlines() if line.startswith("good ")]
    assert "ready" in good_row
    [bad_row] = [line for line in listed.stdout.splitlines() if line.startswith("bad ") and " is damaged" not in line]
    assert "damaged" in bad_row
    [why] = [line for line in listed.stdout.splitlines() if line.startswith("bad is damaged:")]
    assert str(damaged) in why and "ragtui collections delete bad --yes" in why

    as_json = cli(tmp_path, fake_ollama.url, "collections", "list", "--json")
    assert as_json.returncode == 0, as_json.stderr
    rows = {row["name"]: row for row in json.loads(as_json.stdout)}
    assert rows["good"]["state"] == "ready" and rows["good"]["damaged"] == ""
    assert rows["bad"]["state"] == "damaged" and rows["bad"]["damaged"].startswith(str(damaged))

    info = cli(tmp_path, fake_ollama.url, "collections", "info", "bad")
    assert info.returncode == 0 and "Traceback" not in info.stderr, info.stderr
    assert "damaged" in info.stdout and str(damaged) in info.stdout

    more = tmp_path / "more"
    more.mkdir()
    (more / "gate.txt").write_text("A sluice gate holds the mill pond back until the miller lifts it. " * 4)
    ingest = cli(tmp_path, fake_ollama.url, "ingest", str(more), "-c", "bad")
    assert ingest.returncode == 1, ingest.stderr
    assert ingest.stderr.splitlines() == [ingest.stderr.splitlines()[0]], ingest.stderr     # one line
    assert ingest.stderr.startswith(f"ragtui: collection bad is damaged ({damaged}")
    assert "ragtui collections delete bad --yes" in ingest.stderr

    query = cli(tmp_path, fake_ollama.url, "query", "float valve cistern", "-c", "good", "-c", "bad", "--json")
    assert query.returncode == 0 and "Traceback" not in query.stderr, query.stderr
    result = json.loads(query.stdout)
    found_in = {hit["collection"] for hit in result["nodes"]}
    [notice] = [n for n in result["notices"] if "collection bad" in n]
    assert str(damaged) in notice
    if kind in STILL_ANSWERS:         # its indexes are readable: they still answer, and the notice says what is not
        assert found_in == {"good", "bad"}
        assert STILL_ANSWERS[kind] in notice
    else:
        assert found_in == {"good"}
        assert "it was not searched" in notice

    assert _contents(damaged) == before                                # nothing damaged is touched

    deleted = cli(tmp_path, fake_ollama.url, "collections", "delete", "bad", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert not bad.exists() and not bad.is_symlink()
    if kind == "link out of the data dir":     # the link went, never what it leads to
        assert (tmp_path / "elsewhere" / "collection.json").is_file()
    after = cli(tmp_path, fake_ollama.url, "collections", "list", "--json")
    assert [row["name"] for row in json.loads(after.stdout)] == ["good"]


@pytest.mark.parametrize("kind", ["truncated manifest", "vector store"])
def test_ask_over_a_damaged_and_a_healthy_collection_answers_from_the_healthy_one(
        tmp_path: Path, fake_ollama: FakeOllama, two_collections: Path, kind: str) -> None:
    DAMAGES[kind](two_collections)
    asked = cli(tmp_path, fake_ollama.url, "ask", "float valve cistern", "-c", "good", "-c", "bad", "--no-annotate")
    assert asked.returncode == 0, asked.stderr
    assert "Traceback" not in asked.stderr
    assert re.search(r"The sources agree on \w+ \[1\]\.", asked.stdout)
    assert "collection bad is damaged" in asked.stderr
