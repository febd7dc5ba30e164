"""Persisted research sessions (spec 8): one SQLite file under the data dir.

Each save rewrites one session row and its source rows in a single short
transaction, so a reader (another process, the TUI's history screen) sees either
the previous state or the new one, never half of it. WAL lets it read while the
CLI writes. The schema version lives in PRAGMA user_version.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from ragtui.errors import RagtuiError
from ragtui.model import AnnotationState, Chunk, ChunkMeta, Override, SessionSource, StopReason
from ragtui.retrieve.result import RetrievalMeta

SCHEMA_VERSION = 1
FILE_NAME = "history.sqlite3"

_SCHEMA = """
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


class HistoryError(RagtuiError):
    """A history file that cannot be used (newer schema, unknown session)."""


@dataclass
class SessionRecord:
    """Everything a session needs to be shown, exported or reopened."""

    query: str
    collections: list[str]
    config: dict[str, Any]
    synthesis_model: str
    annotation_model: str
    annotation_on: bool = True
    id: int | None = None
    created_at: str = ""
    updated_at: str = ""
    retrieval_meta: RetrievalMeta | None = None     # None until retrieval ran (stored as {})
    keyword_only: bool = False
    sources: list[SessionSource] = field(default_factory=list)
    annotated_by: dict[int, str] = field(default_factory=dict)
    answer: str = ""
    stop_reason: StopReason = StopReason.NONE
    continuations: int = 0
    prompt: list[tuple[str, str]] = field(default_factory=list)
    prompt_numbers: list[int] = field(default_factory=list)  # the last prompt's sources; other citations are flagged
    citations: list[int] = field(default_factory=list)
    unknown_citations: list[int] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True)
class SessionSummary:
    id: int
    created_at: str
    query: str
    collections: tuple[str, ...]
    stop_reason: StopReason
    sources: int
    relevant: int


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class HistoryStore:
    """Sessions in `<data_dir>/history.sqlite3`."""

    def __init__(self, data_dir: Path | str) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise HistoryError(f"{self.path} has history schema {version}, newer than this ragtui "
                                   f"({SCHEMA_VERSION}); upgrade ragtui")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=10.0)
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            yield conn
        finally:
            conn.close()

    def save(self, record: SessionRecord) -> int:
        """Insert or rewrite the record (one transaction); sets and returns its id."""
        now = _now()
        record.created_at = record.created_at or now
        record.updated_at = now
        row = {
            "created_at": record.created_at, "updated_at": record.updated_at, "query": record.query,
            "collections": json.dumps(record.collections), "config": json.dumps(record.config, default=str),
            "synthesis_model": record.synthesis_model, "annotation_model": record.annotation_model,
            "annotation_on": int(record.annotation_on),
            "retrieval_meta": json.dumps(record.retrieval_meta.to_json() if record.retrieval_meta else {},
                                         default=str),
            "keyword_only": int(record.keyword_only), "answer": record.answer,
            "stop_reason": record.stop_reason.value,
            "continuations": record.continuations, "prompt": json.dumps(record.prompt),
            "prompt_numbers": json.dumps(record.prompt_numbers), "citations": json.dumps(record.citations),
            "unknown_citations": json.dumps(record.unknown_citations), "timings": json.dumps(record.timings),
            "error": record.error,
        }
        with self._connect() as conn, conn:
            if record.id is None:
                cols = ", ".join(row)
                marks = ", ".join(f":{k}" for k in row)
                inserted = conn.execute(f"INSERT INTO sessions ({cols}) VALUES ({marks})", row)
                record.id = cast(int, inserted.lastrowid)   # always set after an INSERT
            else:
                sets = ", ".join(f"{k} = :{k}" for k in row)
                cur = conn.execute(f"UPDATE sessions SET {sets} WHERE id = :id", {**row, "id": record.id})
                if cur.rowcount == 0:
                    raise HistoryError(f"session {record.id} no longer exists (deleted?)")
                conn.execute("DELETE FROM sources WHERE session_id = ?", (record.id,))
            conn.executemany(
                "INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(record.id, s.number, s.chunk.id, s.chunk.text, json.dumps(s.chunk.meta.to_dict()), s.score,
                  s.rel_score, json.dumps(list(s.legs)), s.state.value, s.annotation, s.error, s.override.value,
                  record.annotated_by.get(s.number, "")) for s in record.sources])
        return record.id

    def load(self, session_id: int) -> SessionRecord:
        with self._connect() as conn:
            conn.row_factory = sqlite3.Row
            row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise HistoryError(f"no session {session_id} in {self.path}")
            source_rows = conn.execute("SELECT * FROM sources WHERE session_id = ? ORDER BY number",
                                       (session_id,)).fetchall()
        meta = json.loads(row["retrieval_meta"])
        sources = [
            SessionSource(number=r["number"],
                          chunk=Chunk(id=r["chunk_id"], text=r["chunk_text"],
                                      meta=ChunkMeta.from_dict(json.loads(r["chunk_meta"]))),
                          score=r["score"], rel_score=r["rel_score"], legs=tuple(json.loads(r["legs"])),
                          state=AnnotationState(r["state"]), annotation=r["annotation"], error=r["error"],
                          override=Override(r["override"]))
            for r in source_rows
        ]
        return SessionRecord(
            id=row["id"], created_at=row["created_at"], updated_at=row["updated_at"], query=row["query"],
            collections=json.loads(row["collections"]), config=json.loads(row["config"]),
            synthesis_model=row["synthesis_model"], annotation_model=row["annotation_model"],
            annotation_on=bool(row["annotation_on"]), retrieval_meta=RetrievalMeta.from_json(meta) if meta else None,
            keyword_only=bool(row["keyword_only"]), sources=sources,
            annotated_by={r["number"]: r["annotated_by"] for r in source_rows if r["annotated_by"]},
            answer=row["answer"], stop_reason=StopReason.parse(row["stop_reason"]), continuations=row["continuations"],
            prompt=[tuple(m) for m in json.loads(row["prompt"])], prompt_numbers=json.loads(row["prompt_numbers"]),
            citations=json.loads(row["citations"]), unknown_citations=json.loads(row["unknown_citations"]),
            timings=json.loads(row["timings"]), error=row["error"],
        )

    def list_sessions(self, limit: int | None = None) -> list[SessionSummary]:
        """Newest first."""
        sql = ("SELECT s.id, s.created_at, s.query, s.collections, s.stop_reason, "
               "(SELECT count(*) FROM sources WHERE session_id = s.id), "
               "(SELECT count(*) FROM sources WHERE session_id = s.id AND "
               " ((state IN ('relevant', 'off') AND override != 'dropped') OR override = 'rescued')) "
               "FROM sessions s ORDER BY s.id DESC")
        with self._connect() as conn:
            rows = conn.execute(sql + (f" LIMIT {int(limit)}" if limit else "")).fetchall()
        return [SessionSummary(id=r[0], created_at=r[1], query=r[2], collections=tuple(json.loads(r[3])),
                               stop_reason=StopReason.parse(r[4]), sources=r[5], relevant=r[6]) for r in rows]

    def delete(self, session_id: int) -> bool:
        with self._connect() as conn, conn:
            return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

    def export_markdown(self, session_id: int) -> str:
        return render_markdown(self.load(session_id))


def _state_word(source: SessionSource) -> str:
    if source.override is Override.RESCUED:
        return "rescued by hand"
    if source.override is Override.DROPPED:
        return "dropped by hand"
    return {AnnotationState.RELEVANT: "relevant", AnnotationState.IRRELEVANT: "filtered as irrelevant",
            AnnotationState.FAILED: "annotation failed", AnnotationState.OFF: "not annotated",
            AnnotationState.PENDING: "not annotated", AnnotationState.RUNNING: "not annotated"}[source.state]


def render_markdown(record: SessionRecord) -> str:
    """The session as Markdown: the question, the answer, then every source numbered as cited."""
    lines = [f"# {record.query}", "",
             f"- Session: {record.id}, {record.created_at}",
             f"- Collections: {', '.join(record.collections) or '(none)'}",
             f"- Models: synthesis {record.synthesis_model or '-'}, "
             f"annotation {record.annotation_model if record.annotation_on else 'off'}",
             f"- Stop reason: {record.stop_reason or '-'}"
             + (f" (continued {record.continuations} time{'s' if record.continuations != 1 else ''})"
                if record.continuations else ""), ""]
    lines += ["## Answer", "", record.answer.strip() or "_No answer._", ""]
    if record.unknown_citations:
        lines += [f"> Cited but not among the sources given to the model: "
                  f"{', '.join(f'[{n}]' for n in record.unknown_citations)}", ""]
    lines += ["## Sources", ""]
    for s in record.sources:
        cited = " — cited" if s.number in record.citations else ""
        lines.append(f"{s.number}. **{s.chunk.label}** — score {s.score:.3f} (relative {s.rel_score:.2f}), "
                     f"{'+'.join(s.legs) or '-'}, {_state_word(s)}{cited}")
        if s.annotation:
            lines += [f"   > {line}" if line.strip() else "   >" for line in s.annotation.strip().splitlines()]
        if s.error:
            lines.append(f"   > annotation error: {s.error}")
    if not record.sources:
        lines.append("_No sources were retrieved._")
    return "\n".join(lines).rstrip() + "\n"
