"""History schema 2 and 3: conversations of turns, and the migration of a version-1 file (one question per session)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ragtui.history import SCHEMA_VERSION, HistoryStore, render_markdown
from ragtui.model.conversation import AnnotationState, Override, StopReason

# The version-1 schema as ragtui 0.1 wrote it (before turns), to build a v1 file the way a user has one.
V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    query             TEXT NOT NULL,
    collections       TEXT NOT NULL,
    config            TEXT NOT NULL,
    synthesis_model   TEXT NOT NULL,
    annotation_model  TEXT NOT NULL,
    annotation_on     INTEGER NOT NULL,
    retrieval_meta    TEXT NOT NULL,
    keyword_only      INTEGER NOT NULL,
    answer            TEXT NOT NULL,
    stop_reason       TEXT NOT NULL,
    continuations     INTEGER NOT NULL,
    prompt            TEXT NOT NULL,
    prompt_numbers    TEXT NOT NULL,
    citations         TEXT NOT NULL,
    unknown_citations TEXT NOT NULL,
    timings           TEXT NOT NULL,
    error             TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sources (
    session_id   INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    number       INTEGER NOT NULL,
    chunk_id     TEXT NOT NULL,
    chunk_text   TEXT NOT NULL,
    chunk_meta   TEXT NOT NULL,
    score        REAL NOT NULL,
    rel_score    REAL NOT NULL,
    legs         TEXT NOT NULL,
    state        TEXT NOT NULL,
    annotation   TEXT NOT NULL,
    error        TEXT NOT NULL,
    override     TEXT NOT NULL,
    annotated_by TEXT NOT NULL,
    PRIMARY KEY (session_id, number)
);
"""


def _v1_file(data_dir: Path) -> Path:
    path = data_dir / "history.sqlite3"
    data_dir.mkdir(parents=True)
    with sqlite3.connect(path) as conn:
        conn.executescript(V1_SCHEMA)
        conn.execute("PRAGMA user_version = 1")
        meta = {"mode": "hybrid", "collections": {"docs": {"keyword": {"tier": 1, "kept": ["pump"]}}},
                "timings_ms": {"embed": {}}}
        conn.execute("INSERT INTO sessions VALUES (7, '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:01+00:00', "
                     "'How do pumps start?', '[\"docs\"]', '{}', 'chat', 'annotator', 1, ?, 0, "
                     "'At 3 bar [1].', 'stop', 0, '[[\"system\", \"s\"], [\"user\", \"u\"]]', '[1, 2]', '[1]', "
                     "'[]', '{\"retrieve_s\": 0.5}', '')", (json.dumps(meta),))
        chunk = {"collection": "docs", "source": "pumps.md", "file_hash": "h", "format": "md", "chunk_index": 0,
                 "char_start": 0, "char_end": 10}
        conn.executemany("INSERT INTO sources VALUES (7, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?)", [
            (1, "c1", "Pumps start at 3 bar.", json.dumps(chunk), 0.9, 1.0, '["vector"]', "relevant",
             '"Pumps start at 3 bar." relevant', "", "annotator"),
            (2, "c2", "Lunch menu.", json.dumps({**chunk, "source": "lunch.md"}), 0.4, 0.0, '["keyword"]',
             "irrelevant", "[IRRELEVANT!!!]", "rescued", "")])
    return path


def test_a_v1_file_opens_as_one_turn_sessions(tmp_path: Path) -> None:
    path = _v1_file(tmp_path / "data")
    store = HistoryStore(tmp_path / "data")
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
        columns = [r[1] for r in conn.execute("PRAGMA table_info(sessions)")]
        assert "answer" not in columns and "query" not in columns
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    record = store.load(7)
    assert record.query == "How do pumps start?" and len(record.turns) == 1
    turn = record.turn
    assert (turn.answer, turn.stop_reason, turn.citations, turn.prompt_numbers) == \
        ("At 3 bar [1].", StopReason.STOP, (1,), (1, 2))
    assert turn.prompt == (("system", "s"), ("user", "u")) and turn.timings == {"retrieve_s": 0.5}
    assert turn.retrieval_meta is not None and turn.retrieval_meta.collections["docs"].keyword.kept == ("pump",)
    assert turn.rewrite == "" and turn.context_turns == ()
    first, second = turn.sources
    assert (first.number, first.state, first.annotated_by, first.annotation_prompt) == \
        (1, AnnotationState.RELEVANT, "annotator", "")
    assert second.override is Override.RESCUED and second.evidence == ()
    assert [(s.id, s.query, s.sources, s.relevant, s.turns) for s in store.list_sessions()] == \
        [(7, "How do pumps start?", 2, 2, 1)]
    # the migrated file takes new sessions and follow-ups, and deleting still cascades
    store.save(record)
    assert store.load(7).turn.answer == "At 3 bar [1]."
    assert "## Answer\n\nAt 3 bar [1].\n" in render_markdown(store.load(7))
    assert store.delete(7)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM sources").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 0
    HistoryStore(tmp_path / "data")     # opening again migrates nothing twice
