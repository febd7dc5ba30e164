"""Chunk texts in the ingest records: compressed when written, and a text recorded before that (a plain
string) still read as it is."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ragtui.model.chunks import Chunk, ChunkMeta
from ragtui.stores.records import DONE, FileRecord, IngestRecords

PROSE = ("The pump starts when the inlet valve opens and the pressure in the line reaches two bar. " * 40).strip()


def chunk(source: str, index: int, text: str) -> Chunk:
    meta = ChunkMeta(collection="c", source=source, file_hash="h", format="txt", chunk_index=index,
                     char_start=0, char_end=len(text), word_count=len(text.split()))
    return Chunk(f"{source}-{index:05d}", text, meta)


def stored(path: Path, cid: str) -> object:
    db = sqlite3.connect(path / "records.sqlite3")
    try:
        return db.execute("SELECT text FROM chunks WHERE id = ?", (cid,)).fetchone()[0]
    finally:
        db.close()


def test_a_recorded_text_is_held_compressed_and_read_back_whole(tmp_path: Path) -> None:
    records = IngestRecords(tmp_path)
    accented = "Kühlmittel fließt — ünïcode survives 温度. " * 30
    records.begin([(FileRecord("a.txt", chunks=2), [chunk("a.txt", 0, PROSE), chunk("a.txt", 1, accented)])])
    records.mark_done(["a.txt"])
    raw = stored(tmp_path, "a.txt-00000")
    assert isinstance(raw, bytes) and len(raw) < len(PROSE.encode()) / 4      # repetitive prose shrinks a lot
    assert [c.text for c in records.chunks_of(["a.txt"])] == [PROSE, accented]
    assert records.done_texts(["a.txt-00000", "a.txt-00001"]) == {"a.txt-00000": PROSE, "a.txt-00001": accented}
    assert [c.text for c in records.pending("m", 10)] == [PROSE, accented]
    records.close()


def test_a_text_recorded_before_the_compression_is_read_as_it_is(tmp_path: Path) -> None:
    records = IngestRecords(tmp_path)
    records.begin([(FileRecord("old.txt", chunks=1), [chunk("old.txt", 0, "placeholder")])])
    records.mark_done(["old.txt"])
    records.close()
    db = sqlite3.connect(tmp_path / "records.sqlite3")         # the row as an earlier version wrote it
    db.execute("UPDATE chunks SET text = ? WHERE id = ?", (PROSE, "old.txt-00000"))
    db.commit()
    db.close()
    assert isinstance(stored(tmp_path, "old.txt-00000"), str)
    records = IngestRecords(tmp_path)
    assert [c.text for c in records.chunks_by_id(["old.txt-00000"])] == [PROSE]
    assert records.done_texts(["old.txt-00000"]) == {"old.txt-00000": PROSE}
    assert [c.text for c in records.pending("m", 10)] == [PROSE]
    assert records.files(DONE)[0].source == "old.txt"
    records.close()
