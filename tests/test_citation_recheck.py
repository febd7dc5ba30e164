"""Saved sessions' citations checked again after their documents change, through the real CLI and the fake Ollama
over HTTP: `ingest` of a changed file and `collections remove` re-check the sessions that cite it (the report
says how many, and how many citations went stale), `history verify` does it on demand; each state (current,
moved, changed, gone) as the real files bring it about."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragtui.config import Settings
from tests.cli_run import ROOT, run_ragtui
from tests.fake_ollama import FakeOllama, Reply, fenced

PUMPS = "Centrifugal pumps must be primed with water before they start."
QUOTE = "must be primed with water before they start"
SECTIONS = {
    "Pumps": PUMPS + " A dry start ruins the seal faces within seconds.",
    "Valves": "Gate valves are either fully open or fully closed, never throttled.",
    "Seals": "Mechanical seals leak a few drops an hour by design.",
}
QUESTION = "How do centrifugal pumps start?"


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    """`ragtui ARGS`, each Markdown heading its own chunk, one source per file."""
    return run_ragtui([sys.executable, "-m", "ragtui", "--config", os.devnull,
                       "--data-dir", str(settings.data_dir), "--ollama-host", settings.ollama.host,
                       "--set", "synonyms.enabled=false", "--set", "llm.model=chat",
                       "--set", "chunk.strategy=markdown", "--set", "chunk.size_tokens=24",
                       "--set", "chunk.overlap_pct=0", "--set", "retrieve.max_chunks_per_file=1", *args],
                      {**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


def _quoting(body: dict[str, Any]) -> Reply:
    """Annotations quote the extract's first sentence; the answer quotes the priming rule from the source that
    holds it."""
    prompt = str(body["messages"][-1]["content"])
    if "EXTRACT:" in prompt:
        first = re.split(r"(?<=[.!?])\s", fenced(prompt.split("EXTRACT:", 1)[1]).splitlines()[-1], maxsplit=1)[0]
        return Reply.text(f'"{first}" Relevant.')
    blocks = re.findall(r"(?ms)^\[(\d+)\] SOURCE: .*?\n<<<\n(.*?)\n>>>$", prompt)
    n = next(n for n, text in blocks if "primed" in text)
    return Reply.text(f'Pumps "{QUOTE}" [{n}].')


CANTEEN = "# Canteen\n\nThe canteen coffee pumps start at seven each morning.\n"


def _write(folder: Path, sections: dict[str, str]) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "plant.md").write_text("".join(f"# {head}\n\n{text}\n\n" for head, text in sections.items()))
    (folder / "canteen.md").write_text(CANTEEN)


def _asked(tmp_path: Path, settings: Settings, fake_ollama: FakeOllama) -> tuple[Path, int, dict[str, Any]]:
    """The docs ingested and one question asked: the docs folder, the session id, its plant.md source."""
    fake_ollama.responder = _quoting
    docs = tmp_path / "docs"
    _write(docs, SECTIONS)
    done = _cli(settings, "ingest", str(docs), "-c", "plant")
    assert done.returncode == 0, done.stderr
    asked = _cli(settings, "ask", "-c", "plant", "--json", QUESTION)
    assert asked.returncode == 0, asked.stderr
    data = json.loads(asked.stdout)
    source = next(s for s in data["sources"] if s["source"] == "plant.md")
    assert PUMPS.split()[0] in source["annotation"] and f'"{QUOTE}"' in data["answer"]
    return docs, data["session"], source


def _reingested(settings: Settings, docs: Path) -> str:
    done = _cli(settings, "ingest", str(docs), "-c", "plant")
    assert done.returncode == 0, done.stderr
    return done.stdout


def _verified(settings: Settings, *args: str) -> tuple[int, dict[str, Any]]:
    done = _cli(settings, "history", "verify", "--json", *args)
    assert done.returncode in (0, 3), done.stderr
    return done.returncode, json.loads(done.stdout)


def _check(data: dict[str, Any], session: int, number: int) -> dict[str, Any]:
    found = next(s for s in data["sessions"] if s["session"] == session)
    return next(c for c in found["checks"] if c["number"] == number)


def test_a_change_elsewhere_in_the_file_leaves_the_citation_current(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    docs, session, source = _asked(tmp_path, settings, fake_ollama)
    _write(docs, {**SECTIONS, "Seals": "Mechanical seals are replaced every two years."})

    report = _reingested(settings, docs)
    assert "history: re-checked 1 session citing a changed or removed file: every citation current" in report
    status, data = _verified(settings, str(session))
    assert status == 0
    assert _check(data, session, source["number"])["state"] == "current"
    assert data["stale_citations"] == 0 and data["checked"] == 1


def test_a_quote_now_in_another_chunk_is_moved_and_says_where(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    docs, session, source = _asked(tmp_path, settings, fake_ollama)
    _write(docs, {"Scope": "This guide covers the equipment of the plant room.", **SECTIONS})

    report = _reingested(settings, docs)
    assert "history: re-checked 1 session citing a changed or removed file: 1 stale citation" in report
    status, data = _verified(settings, str(session))
    assert status == 3
    check = _check(data, session, source["number"])
    assert check["state"] == "moved" and check["stale"]
    assert check["chunk_id"] != source["chunk_id"] and check["label"] == "plant/plant.md"
    assert check["verdict"] == f"moved to plant/plant.md (chunk {check['chunk_id']})"
    text = _cli(settings, "history", "verify", str(session))
    assert text.returncode == 3
    assert f"  [{source['number']}] plant/plant.md: moved to plant/plant.md (chunk {check['chunk_id']})" in \
        text.stdout.splitlines()
    shown = _cli(settings, "history", "list")
    assert f"(1 stale: `ragtui history verify {session}`)" in shown.stdout
    exported = _cli(settings, "history", "export", str(session)).stdout.splitlines()    # the latest check's time
    assert any(re.fullmatch(re.escape(f"   > (the document changed since: moved to plant/plant.md (chunk "
                                      f"{check['chunk_id']}), re-checked ") + r"[-0-9T:+]+\)", line)
               for line in exported), exported


def test_a_quote_the_document_no_longer_holds_is_changed(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    docs, session, source = _asked(tmp_path, settings, fake_ollama)
    _write(docs, {**SECTIONS, "Pumps": "Centrifugal pumps self-prime from the sump. A dry start is harmless."})

    done = _cli(settings, "ingest", str(docs), "-c", "plant", "--json")       # the report as JSON says it too
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["updated"] == ["plant.md"] and (report["sessions_rechecked"], report["citations_stale"]) == (1, 1)
    status, data = _verified(settings, "--all")
    assert status == 3
    check = _check(data, session, source["number"])
    assert check["state"] == "changed" and check["chunk_id"] == ""
    assert check["missing"] in (PUMPS, QUOTE)
    assert check["verdict"] == f'changed: "{check["missing"]}" is no longer in the document'


def test_a_removed_file_makes_its_citations_gone(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    _, session, source = _asked(tmp_path, settings, fake_ollama)

    removed = _cli(settings, "collections", "remove", "plant", "plant.md")
    assert removed.returncode == 0, removed.stderr
    assert "history: re-checked 1 session citing a changed or removed file: 1 stale citation" in removed.stdout
    status, data = _verified(settings, "--all")
    assert status == 3
    assert _check(data, session, source["number"])["state"] == "gone"
    others = [c for c in data["sessions"][0]["checks"] if c["number"] != source["number"]]
    assert others and all(c["state"] == "current" for c in others)       # canteen.md is still there


def test_verify_json_shape_and_usage(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    _, session, source = _asked(tmp_path, settings, fake_ollama)
    status, data = _verified(settings, "--all")
    assert status == 0
    assert set(data) == {"sessions", "checked", "stale_sessions", "stale_citations"}
    assert data["checked"] == 1 and data["stale_sessions"] == 0
    entry = data["sessions"][0]
    assert set(entry) == {"session", "query", "sources", "stale", "checks"} and entry["query"] == QUESTION
    check = _check(data, session, source["number"])
    assert set(check) == {"number", "cited", "state", "stale", "chunk_id", "pages", "label", "missing", "verdict",
                          "checked_at"}
    assert check["cited"] == "plant/plant.md" and check["state"] == "current" and check["verdict"] == "current"

    assert _cli(settings, "history", "verify").returncode == 2
    assert _cli(settings, "history", "verify", str(session), "--all").returncode == 2
    missing = _cli(settings, "history", "verify", "999")
    assert missing.returncode == 1 and "no session 999" in missing.stderr


def test_a_schema_3_history_gains_the_checks_table_and_keeps_its_sessions(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    _, session, source = _asked(tmp_path, settings, fake_ollama)
    path = settings.data_dir / "history.sqlite3"
    with sqlite3.connect(path) as conn:          # the file as ragtui wrote it before the checks were kept
        conn.execute("DROP TABLE citation_checks")
        conn.execute("PRAGMA user_version = 3")
    conn.close()

    status, data = _verified(settings, str(session))
    assert status == 0 and _check(data, session, source["number"])["state"] == "current"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
        assert conn.execute("SELECT count(*) FROM citation_checks").fetchone()[0] == len(data["sessions"][0]["checks"])
    conn.close()


def _pdf(path: Path, pages: list[str]) -> None:
    import pymupdf

    with pymupdf.open() as doc:
        for text in pages:
            doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 550, 800), text, fontsize=11)
        doc.save(str(path))


def test_a_quote_now_on_another_page_of_a_pdf_is_moved_to_that_page(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    fake_ollama.responder = _quoting
    docs = tmp_path / "docs"
    docs.mkdir()
    valves = SECTIONS["Valves"]
    _pdf(docs / "plant.pdf", [SECTIONS["Pumps"], valves])
    assert _cli(settings, "ingest", str(docs), "-c", "plant").returncode == 0
    data = json.loads(_cli(settings, "ask", "-c", "plant", "--json", QUESTION).stdout)
    source = next(s for s in data["sources"] if s["source"] == "plant.pdf" and "primed" in s["annotation"])
    assert source["page"] == "1"

    _pdf(docs / "plant.pdf", ["This manual covers the equipment of the plant room.", SECTIONS["Pumps"], valves])
    assert "1 stale citation" in _reingested(settings, docs)
    status, verified = _verified(settings, str(data["session"]))
    check = _check(verified, data["session"], source["number"])
    assert status == 3 and check["state"] == "moved"
    # the new first page is short: its chunk runs on over page 2, where the quote now is
    assert (check["pages"], check["label"]) == ("2", "plant/plant.pdf [pp.1-2]")
    assert check["verdict"] == f"moved to plant/plant.pdf [pp.1-2] (chunk {check['chunk_id']}), the quote on page 2"


def test_an_unreadable_history_leaves_the_ingest_standing_and_says_the_sessions_were_not_rechecked(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    docs, _, _ = _asked(tmp_path, settings, fake_ollama)
    (settings.data_dir / "history.sqlite3").write_bytes(b"not a database " * 512)
    _write(docs, {**SECTIONS, "Seals": "Mechanical seals are replaced every two years."})

    done = _cli(settings, "ingest", str(docs), "-c", "plant")
    assert done.returncode == 0, done.stderr
    assert "1 updated" in done.stdout and "history: re-checked" not in done.stdout
    warning = next(line for line in done.stdout.splitlines() if line.startswith("warning: saved sessions not"))
    assert "history file" in warning and "is damaged" in warning
