"""`-f/--filter` on `query` and `ask`: a path glob and a heading match narrow both retrieval legs, through a real
ingest and the fake Ollama over HTTP, and a session keeps its filter when it is reopened."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.model.filters import FilterError, SearchFilter, parse_filters, split_query
from tests.fake_ollama import FakeOllama

PUMPS_MD = """# Methods

The pump was primed with water before every trial of the pump.

# Results

The pump delivered forty litres a minute; the pump impeller wore evenly.
"""


def flags(tmp_path: Path, fake: FakeOllama) -> list[str]:
    return ["--config", os.devnull, "--data-dir", str(tmp_path / "data"), "--ollama-host", fake.url,
            "--set", "synonyms.enabled=false", "--set", "retrieve.min_similarity=0", "--set", "keyword.min_query_ic=0",
            "--set", "chunk.strategy=markdown", "--set", "llm.model=chat"]


@pytest.fixture
def ingested(tmp_path: Path, fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "corpus"
    (root / "docs").mkdir(parents=True)
    (root / "notes").mkdir()
    (root / "docs" / "pumps.md").write_text(PUMPS_MD, encoding="utf-8")
    (root / "docs" / "valves.txt").write_text("A valve stops the pump flow when it closes.", encoding="utf-8")
    (root / "notes" / "pump-log.txt").write_text("Pump log: the pump ran all night, pump pressure steady.",
                                                  encoding="utf-8")
    assert main([*flags(tmp_path, fake_ollama), "ingest", str(root), "-c", "lab"]) == 0
    capsys.readouterr()
    return root


def query(tmp_path: Path, fake: FakeOllama, capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main([*flags(tmp_path, fake), "query", "pump", "-c", "lab", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_a_path_glob_narrows_each_leg(ingested: Path, tmp_path: Path, fake_ollama: FakeOllama,
                                      capsys: pytest.CaptureFixture[str], mode: str) -> None:
    everything = query(tmp_path, fake_ollama, capsys, "--mode", mode)
    assert {n["source"] for n in everything["nodes"]} >= {"notes/pump-log.txt", "docs/pumps.md"}
    inside = query(tmp_path, fake_ollama, capsys, "--mode", mode, "-f", "path:docs/*")
    assert inside["nodes"] and {n["source"] for n in inside["nodes"]} <= {"docs/pumps.md", "docs/valves.txt"}
    assert inside["retrieval_meta"]["filter"] == {"path": ["docs/*"], "heading": []}
    assert "filter" not in everything["retrieval_meta"]       # an unfiltered query's JSON keeps its shape
    # a name without a folder matches the file anywhere; a folder ending in "/" means everything under it
    by_name = query(tmp_path, fake_ollama, capsys, "--mode", mode, "-f", "pump-log.txt")
    assert {n["source"] for n in by_name["nodes"]} == {"notes/pump-log.txt"}
    folder = query(tmp_path, fake_ollama, capsys, "--mode", mode, "-f", "path:notes/")
    assert {n["source"] for n in folder["nodes"]} == {"notes/pump-log.txt"}


@pytest.mark.parametrize("mode", ["vector", "keyword"])
def test_a_heading_match_narrows_each_leg_to_that_section(ingested: Path, tmp_path: Path, fake_ollama: FakeOllama,
                                                          capsys: pytest.CaptureFixture[str], mode: str) -> None:
    found = query(tmp_path, fake_ollama, capsys, "--mode", mode, "-f", "heading:results")
    assert found["nodes"]
    assert all(n["source"] == "docs/pumps.md" and "forty litres" in n["text"] and "primed" not in n["text"]
               for n in found["nodes"])
    # kinds narrow each other: the heading exists only in docs/, so a notes/ glob leaves nothing, and says so
    none = query(tmp_path, fake_ollama, capsys, "--mode", mode, "-f", "heading:Results", "-f", "path:notes/*")
    assert none["nodes"] == []
    assert any("Nothing in collection lab lies inside the filter path:notes/* heading:Results" in n
               for n in none["notices"])


def test_the_table_names_the_filter(ingested: Path, tmp_path: Path, fake_ollama: FakeOllama,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama), "query", "pump", "-f", "heading:Results", "-f", "docs/*"]) == 0
    out = capsys.readouterr().out
    assert "filter: path:docs/* heading:Results" in out and "notes/pump-log.txt" not in out


def test_a_bad_filter_is_a_usage_error(ingested: Path, tmp_path: Path, fake_ollama: FakeOllama,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama), "query", "pump", "-f", "heading:"]) == 2
    err = capsys.readouterr().err
    assert "empty heading filter" in err and len(err.strip().splitlines()) == 1
    assert main([*flags(tmp_path, fake_ollama), "ask", "pump", "-f", "path:\x1b[31m"]) == 2
    assert "control character" in capsys.readouterr().err


def test_ask_keeps_the_filter_with_the_session(ingested: Path, tmp_path: Path, fake_ollama: FakeOllama,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama), "ask", "pump", "-c", "lab", "--no-annotate", "--json",
                 "-f", "path:docs/*"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["sources"] and all(s["label"].startswith("lab/docs/") for s in first["sources"])
    assert first["retrieval_meta"]["filter"]["path"] == ["docs/*"]
    # a follow-up on the reopened session (a new process would do the same) searches inside the same filter
    assert main([*flags(tmp_path, fake_ollama), "ask", "--follow-up", "what about the log of the pump",
                 "--session", str(first["session"]), "--no-annotate", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["turns"][1]["retrieval_meta"]["filter"]["path"] == ["docs/*"]
    assert second["sources"] and all(s["label"].startswith("lab/docs/") for s in second["sources"])


def test_filter_values_read_back() -> None:
    f = parse_filters(["path:docs/*.pdf", "heading:Related  Work", "*.md", "path:docs/*.pdf"])
    assert f == SearchFilter(paths=("docs/*.pdf", "*.md"), headings=("Related  Work",))
    assert f.matches("docs/a.pdf", "Intro > related work") and not f.matches("docs/a.pdf", "Intro")
    assert f.matches("deep/x.md", "Related work") and not f.matches("deep/x.txt", "Related work")
    assert SearchFilter.from_json(json.loads(json.dumps(f.to_json()))) == f
    assert SearchFilter.from_json({"path": [1, "a"], "heading": "x"}) == SearchFilter(paths=("a",))
    assert f.chips() == ["path:docs/*.pdf", "path:*.md", "heading:'Related  Work'"]
    assert split_query('pump heading:"Related work" speed path:docs/') == \
        ("pump speed", SearchFilter(paths=("docs/",), headings=("Related work",)))
    assert split_query("what is 'the pump") == ("what is 'the pump", SearchFilter())
    with pytest.raises(FilterError):
        parse_filters(["path:" + "x" * 600])
