"""`ragtui ingest` and `ragtui collections` as a user runs them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ragtui.cli import main
from tests.fake_ollama import FakeOllama


def flags(tmp_path: Path, host: str) -> list[str]:
    return ["--config", os.devnull, "--data-dir", str(tmp_path / "data"), "--ollama-host", host,
            "--set", "chunk.size_tokens=64", "--set", "embed.backoff_s=0.01"]


def test_ingest_then_collections(fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Pumps\n\nA centrifugal pump moves water with an impeller. " * 5)
    (docs / "b.bin").write_bytes(b"\x00\x01")
    f = flags(tmp_path, fake_ollama.url)
    assert main([*f, "ingest", str(docs), "-c", "eng", "--topic", "engineering"]) == 0
    out = capsys.readouterr().out
    assert "progress: 2/2 files" in out
    assert "collection eng: 1 added, 0 updated, 0 unchanged, 0 removed, 0 duplicate, 1 skipped" in out
    assert "b.bin: unsupported format: .bin" in out

    assert main([*f, "collections", "list"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0].split() == ["NAME", "FILES", "CHUNKS", "STATE", "MODELS", "TOPIC"]
    assert listing[1].split()[:2] == ["eng", "1"] and "ready" in listing[1] and "engineering" in listing[1]

    assert main([*f, "collections", "info", "eng"]) == 0
    info = capsys.readouterr().out
    assert "formats: md 1" in info and "b.bin: unsupported format" in info
    assert "entropy histogram" in info and "natural language" in info

    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main([*f, "collections", "delete", "eng"]) == 2
    assert "--yes" in capsys.readouterr().err
    assert main([*f, "collections", "delete", "eng", "--yes"]) == 0
    assert main([*f, "collections", "info", "eng"]) == 1
    assert "no collection named 'eng'" in capsys.readouterr().err


def test_ingest_with_ollama_down_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Gears transmit torque between shafts. " * 5)
    assert main([*flags(tmp_path, "http://127.0.0.1:9"), "ingest", str(docs), "-c", "x"]) == 0
    captured = capsys.readouterr()
    assert "nomic-embed-text pass is skipped" in captured.err
    assert "keyword search works" in captured.out
    assert main([*flags(tmp_path, "http://127.0.0.1:9"), "collections", "list"]) == 0
    assert "needs embeddings" in capsys.readouterr().out


def test_bad_collection_name_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, "http://127.0.0.1:9"), "ingest", str(tmp_path), "-c", "../x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid collection name" in err


def test_a_bib_beside_the_documents_is_counted_not_ingested(fake_ollama: FakeOllama, tmp_path: Path) -> None:
    """A BibTeX file kept for the bibliography export is no document: the walk counts it and leaves it out;
    named on the command line, it is ingested as asked."""
    from tests.cli_run import cli

    folder = tmp_path / "library"
    (folder / "refs").mkdir(parents=True)
    (folder / "pump.txt").write_text("A centrifugal pump moves water with an impeller.", encoding="utf-8")
    (folder / "refs.bib").write_text("@article{smith2019, title = {Pumps}}\n", encoding="utf-8")
    (folder / "refs" / "Zotero.BIB").write_text("@book{doe2020, title = {Valves}}\n", encoding="utf-8")
    done = cli(tmp_path, fake_ollama.url, "ingest", str(folder), "-c", "lab")
    assert done.returncode == 0, done.stderr
    assert "collection lab: 1 added" in done.stdout and "0 skipped" in done.stdout
    assert "not ingested: 2 *.bib (BibTeX, read by the bibliography export)" in done.stdout
    assert "hidden paths" not in done.stdout          # nothing hidden or matched by ignore rules here
    listed = cli(tmp_path, fake_ollama.url, "collections", "info", "lab")
    assert "files 1, chunks 1" in listed.stdout and "bib" not in listed.stdout.lower()

    named = cli(tmp_path, fake_ollama.url, "ingest", str(folder / "refs.bib"), "-c", "lab")
    assert named.returncode == 0 and "1 added" in named.stdout, named.stdout + named.stderr


def test_a_chunk_that_starts_at_a_heading_is_in_that_heading_s_section(fake_ollama: FakeOllama,
                                                                      tmp_path: Path) -> None:
    """Under the default (window) chunking a window can begin on the blank line before a heading (here after a
    table, a unit no window cuts): its chunk starts at the heading and belongs to that section, so a heading
    filter finds it."""
    from tests.cli_run import cli

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "manual.md").write_text(
        "# Pumps\n\nThe pump section lists the parts of a centrifugal pump and what each one does.\n\n"
        "| part | role |\n|---|---|\n| impeller | spins |\n| casing | holds |\n\n"
        "# Valves\n\nA zebra valve shuts the inlet once the float has risen. The seat must be clean.\n")
    size = ("--set", "chunk.size_tokens=32", "--set", "retrieve.min_similarity=0")
    assert cli(tmp_path, fake_ollama.url, *size, "ingest", str(docs), "-c", "docs").returncode == 0
    found = cli(tmp_path, fake_ollama.url, *size, "query", "zebra valve", "-c", "docs", "-f", "heading:Valves",
                "--json")
    assert found.returncode == 0, found.stderr
    nodes = json.loads(found.stdout)["nodes"]
    assert [n["text"].split("\n")[0] for n in nodes] == ["# Valves"], nodes
    elsewhere = cli(tmp_path, fake_ollama.url, *size, "query", "zebra valve", "-c", "docs", "-f", "heading:Pumps",
                    "--json")
    assert all("zebra" not in n["text"] for n in json.loads(elsewhere.stdout)["nodes"])
