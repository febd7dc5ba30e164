"""History store: round trip, listing, deletion, schema version, Markdown export."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from ragtui.history import SCHEMA_VERSION, HistoryError, HistoryStore
from ragtui.model.chunks import LegRank
from ragtui.model.conversation import AnnotationState, Conversation, Override, SessionSource, StopReason, Turn
from ragtui.model.retrieval import CollectionMeta, KeywordMeta, RetrievalMeta
from tests.research_helpers import make_chunk


def _record() -> Conversation:
    sources = [
        SessionSource(1, make_chunk(1, "Pumps start at 3 bar.", page="iv"), 0.91, 1.0, ("vector", "keyword"),
                      AnnotationState.RELEVANT, '"Pumps start at 3 bar."\nRelevant: start pressure.',
                      annotated_by="annotator", annotation_prompt="/p/strict.txt",
                      evidence=(LegRank("vector", 2, 0.8), LegRank("keyword", 1, 7.5), LegRank("fused", 1, 0.91))),
        SessionSource(2, make_chunk(2, "Menu."), 0.40, 0.2, ("vector",), AnnotationState.IRRELEVANT,
                      "[IRRELEVANT!!!]", override=Override.RESCUED),
        SessionSource(3, make_chunk(3, "Seals."), 0.30, 0.0, ("keyword",), AnnotationState.FAILED, "",
                      error="HTTP 500: out of memory"),
    ]
    turn = Turn(query="How do pumps start?",
                retrieval_meta=RetrievalMeta(collections={"docs": CollectionMeta(
                    keyword=KeywordMeta(tier=1, words=("pump",), idf={"pump": 2.5}))}), keyword_only=True,
                sources=sources, answer="They start at 3 bar [1][7].",
                stop_reason=StopReason.LENGTH, continuations=2, prompt=[("system", "s"), ("user", "u")],
                prompt_numbers=[1, 2], citations=[1, 7], unknown_citations=[7], timings={"retrieve_s": 0.1})
    return Conversation(collections=["docs", "notes"], config={"llm.model": "chat"},
                         synthesis_model="chat", annotation_model="annotator", turns=[turn])


def test_round_trip(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    record = _record()
    session_id = store.save(record).id
    assert session_id is not None
    loaded = store.load(session_id)
    assert loaded.created_at and loaded.id == session_id
    for name in ("query", "collections", "config", "synthesis_model", "annotation_model"):
        assert getattr(loaded, name) == getattr(record, name), name
    assert loaded.turns == record.turns
    assert loaded.all_sources == record.all_sources
    assert [s.relevant for s in loaded.all_sources] == [True, True, False]


def test_save_again_rewrites_in_place(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    record = store.save(_record())
    record = store.save(record.with_turn(replace(record.turn, sources=record.turn.sources[:1], answer="Shorter.")))
    assert record.id is not None
    loaded = store.load(record.id)
    assert len(loaded.all_sources) == 1 and loaded.turn.answer == "Shorter."
    assert [s.id for s in store.list_sessions()] == [record.id]


def test_list_newest_first_and_delete(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    first = store.save(_record())
    record = _record()
    second = store.save(record.with_turn(replace(record.turn, query="Second question")))
    assert first.id is not None
    listed = store.list_sessions()
    assert [s.query for s in listed] == ["Second question", "How do pumps start?"]
    assert listed[0].sources == 3 and listed[0].relevant == 2 and listed[0].collections == ("docs", "notes")
    assert listed[0].id == second.id
    assert store.delete(first.id) and not store.delete(first.id)
    with pytest.raises(HistoryError, match=f"no session {first.id}"):
        store.load(first.id)
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("SELECT count(*) FROM sources WHERE session_id = ?", (first.id,)).fetchone()[0] == 0


def test_wal_and_schema_version(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(HistoryError, match="newer"):
        HistoryStore(tmp_path)


def test_markdown_export(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    session_id = store.save(_record()).id
    assert session_id is not None
    text = store.export_markdown(session_id)
    assert text.startswith("# How do pumps start?\n")
    assert "## Answer\n\nThey start at 3 bar [1][7].\n" in text
    assert "- Collections: docs, notes" in text and "continued 2 times" in text
    assert "Cited but not among the sources given to the model: [7]" in text
    lines = text.splitlines()
    numbered = [line for line in lines if line[:3] in ("1. ", "2. ", "3. ")]
    assert numbered[0].startswith("1. **docs/file1.md [p.iv]** — score 0.910 (relative 1.00), vector+keyword, "
                                  "relevant — cited")
    assert numbered[1].startswith("2. **docs/file2.md**") and "rescued by hand" in numbered[1]
    assert numbered[2].startswith("3. **docs/file3.md**") and "annotation failed" in numbered[2]
    assert "   > annotated by annotator with /p/strict.txt:" in lines
    assert '   > "Pumps start at 3 bar."' in lines and "   > Relevant: start pressure." in lines
    assert "   > annotation error: HTTP 500: out of memory" in lines


def test_a_reader_mid_transaction_neither_blocks_a_save_nor_sees_half_of_it(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    record = store.save(_record())
    reader = sqlite3.connect(store.path, timeout=0.1)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM sources").fetchone()[0] == 3
        store.save(record.with_turn(replace(record.turn, sources=record.turn.sources[:2])))   # WAL: no wait
        assert reader.execute("SELECT count(*) FROM sources").fetchone()[0] == 3    # its snapshot
        reader.execute("COMMIT")
        assert reader.execute("SELECT count(*) FROM sources").fetchone()[0] == 2
    finally:
        reader.close()
