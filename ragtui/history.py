"""Stored research sessions: one SQLite file under the data dir, its schema, migration and damage check,
and the Markdown export.

A session is a conversation: one `sessions` row, one `turns` row per question,
and the `sources` of every turn (numbered across the whole session). Each save
rewrites them in a single short transaction, so a reader (another process, the
TUI's history screen) sees either the previous state or the new one, never half
of it. WAL lets it read while the CLI writes. The schema version lives in PRAGMA
user_version; a version-1 file (one question per session) is migrated on open.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

from ragtui.errors import RagtuiError, disk_full
from ragtui.model.chunks import Chunk, ChunkMeta, LegRank
from ragtui.model.conversation import (
    AnnotationState,
    Conversation,
    Override,
    SessionSource,
    SessionSummary,
    Standing,
    StopReason,
    Turn,
)
from ragtui.model.research_run import ResearchRun
from ragtui.model.retrieval import RetrievalMeta
from ragtui.model_ids import short_name
from ragtui.quotes import quoteless
from ragtui.timestamps import now as _now

SCHEMA_VERSION = 4
FILE_NAME = "history.sqlite3"
RECORD_ID_MAX = 2**63 - 1     # SQLite's INTEGER is a signed 64-bit number: one more does not bind

_TURN_COLUMNS = """
    query             TEXT NOT NULL,
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
    error             TEXT NOT NULL"""

_SESSIONS = """
CREATE TABLE IF NOT EXISTS {name} (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    collections       TEXT NOT NULL,
    config            TEXT NOT NULL,
    synthesis_model   TEXT NOT NULL,
    annotation_model  TEXT NOT NULL,
    annotation_on     INTEGER NOT NULL,
    research          TEXT NOT NULL DEFAULT ''
);
"""

_TURNS = f"""
CREATE TABLE IF NOT EXISTS turns (
    session_id        INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn              INTEGER NOT NULL,
    rewrite           TEXT NOT NULL,
    rewrite_by        TEXT NOT NULL,
    rewrite_meta      TEXT NOT NULL,
    context_turns     TEXT NOT NULL,{_TURN_COLUMNS},
    PRIMARY KEY (session_id, turn)
);
"""

# Columns version 2 added to `sources`; the v1 -> v2 migration adds them with these defaults.
_V2_SOURCE_COLUMNS = (
    ("turn", "INTEGER NOT NULL DEFAULT 1"),
    ("annotation_prompt", "TEXT NOT NULL DEFAULT ''"),
    ("evidence", "TEXT NOT NULL DEFAULT '[]'"),
    ("neighbor_of", "INTEGER NOT NULL DEFAULT 0"),
    ("distance", "INTEGER NOT NULL DEFAULT 0"),
)

# Version 3 adds `quoteless` (1: judged relevant with no quote its chunk holds); NULL in rows written before,
# which are judged again on load from their stored annotation and chunk text.
_V3_SOURCE_COLUMNS = (("quoteless", "INTEGER"),)

# Version 4 adds `sessions.research`: a research run's plan, rounds, limits and cost as JSON ("" for an ordinary
# conversation, as every session written before it).
_V4_SESSION_COLUMN = "ALTER TABLE sessions ADD COLUMN research TEXT NOT NULL DEFAULT ''"

_SOURCES = """
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
""" + "".join(f"    {name} {kind},\n"
            for name, kind in _V2_SOURCE_COLUMNS + _V3_SOURCE_COLUMNS) + """    PRIMARY KEY (session_id, number)
);
"""

_TURN_FIELDS = ("query", "retrieval_meta", "keyword_only", "answer", "stop_reason", "continuations", "prompt",
                "prompt_numbers", "citations", "unknown_citations", "timings", "error")
_SESSION_FIELDS = ("id", "created_at", "updated_at", "collections", "config", "synthesis_model",
                   "annotation_model", "annotation_on")


def _migrate_v2(conn: sqlite3.Connection, version: int) -> None:
    """Schema 2 or 3 -> 4 (one transaction): from 2, `sources` gains its v3 columns, NULL in the rows already
    there; from either, `sessions` gains its v4 column."""
    with conn:
        for name, kind in _V3_SOURCE_COLUMNS if version == 2 else ():
            conn.execute(f"ALTER TABLE sources ADD COLUMN {name} {kind}")
        if "research" not in {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}:
            conn.execute(_V4_SESSION_COLUMN)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _migrate_v1(conn: sqlite3.Connection) -> None:
    """Schema 1 (one question per session) -> 4 (turns): every session becomes a one-turn conversation.

    The turn-level columns move from `sessions` to `turns`; `sources` gains its v2
    columns with defaults (turn 1; "" for the prompt, which v1 did not record). One
    transaction, foreign keys off, so dropping the old sessions table cascades
    into nothing.
    """
    turn_cols = ", ".join(_TURN_FIELDS)
    session_cols = ", ".join(_SESSION_FIELDS)
    conn.isolation_level = None
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_TURNS)
        conn.execute(f"INSERT INTO turns (session_id, turn, rewrite, rewrite_by, rewrite_meta, context_turns, "
                     f"{turn_cols}) SELECT id, 1, '', '', '{{}}', '[]', {turn_cols} FROM sessions")
        conn.execute(_SESSIONS.format(name="sessions_v2"))
        conn.execute(f"INSERT INTO sessions_v2 ({session_cols}) SELECT {session_cols} FROM sessions")
        conn.execute("DROP TABLE sessions")
        conn.execute("ALTER TABLE sessions_v2 RENAME TO sessions")
        for name, kind in _V2_SOURCE_COLUMNS + _V3_SOURCE_COLUMNS:
            conn.execute(f"ALTER TABLE sources ADD COLUMN {name} {kind}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute("PRAGMA foreign_keys = ON")


class HistoryError(RagtuiError):
    """A history file that cannot be used (newer schema, unknown session)."""


class HistoryUnusable(HistoryError):
    """The history file cannot be used: the rest of ragtui runs without history (sessions are not saved, past
    ones cannot be shown), and the file is not touched again by this process."""

    def __init__(self, path: Path, error: str, message: str, hint: str) -> None:
        super().__init__(message, hint=hint)
        self.path, self.error = path, error


class HistoryDamaged(HistoryUnusable):
    """The history file is not a readable SQLite database (truncated, overwritten, garbage).

    The file is left exactly as it is, for the user to move aside (and perhaps recover with sqlite3's
    `.recover`).
    """

    def __init__(self, path: Path, error: str) -> None:
        aside = path.with_name(path.name + ".damaged")
        wal = path.with_name(path.name + "-wal")
        also = f" (and {wal.name} beside it, to {aside.name}-wal)" if wal.exists() else ""
        super().__init__(path, error,
                         f"history file {path} is damaged ({error}): sessions are not saved and past ones "
                         "cannot be shown until it is moved aside",
                         f"nothing in it was changed; `mv {path} {aside}`{also} starts a new history")


class HistoryUnwritable(HistoryUnusable):
    """The history file cannot be created, opened or written: a full disk, a folder in its place, no permission."""

    def __init__(self, path: Path, exc: Exception) -> None:
        error = str(exc)
        if path.is_dir():
            hint = f"a folder stands where the file belongs; move it aside (`mv {path} {path}.folder`)"
        elif disk_full(exc):
            hint = f"free space on the disk holding {path.parent} (or set storage.data_dir to a disk with room)"
        else:
            hint = f"check that {path.parent} is writable and has room"
        super().__init__(path, error,
                         f"history file {path} cannot be written ({error}): sessions are not saved and past "
                         "ones cannot be shown", hint)


# SQLite's own verdicts on a file that is not a sound database; "locked" or "busy" are not damage.
_DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
# Primary result codes (https://www.sqlite.org/rescode.html) of a file that cannot be opened, created or
# written where it stands: no such file can be made (a folder in its place), a full disk, an I/O error, a
# read-only file or folder, no permission.
_UNOPENED_CODES = frozenset({sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR,
                             sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM})


def _unusable(path: Path, exc: Exception) -> HistoryUnusable | None:
    """What `exc` says about the history file at `path`, or None when it says nothing about the file (a lock
    held elsewhere, a bug)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code in _DAMAGE_CODES:
        return HistoryDamaged(path, str(exc))
    if isinstance(exc, OSError) or (code is not None and code & 0xFF in _UNOPENED_CODES):
        return HistoryUnwritable(path, exc)
    return None


def _damage(path: Path) -> str | None:
    """What is wrong with an existing history file, or None when SQLite finds it sound.

    Read only, so a damaged file is never written to; `quick_check` reads every page (about
    40 ms for 130 MB). Without a `-wal` file beside it no connection has the file open (the
    history runs in WAL mode, whose last connection removes it) and a new writer would append
    to its own WAL, not to this file: it is read as `immutable`, which creates no `-wal` or
    `-shm` files beside a damaged one. With a `-wal`, `mode=ro` reads it with SQLite's locks.
    """
    if not path.exists():
        return None
    mode = "mode=ro" if path.with_name(path.name + "-wal").exists() else "immutable=1"
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True, timeout=10.0)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) in _DAMAGE_CODES:
            return str(exc)
        raise
    if rows != [("ok",)]:
        return "; ".join(str(row[0]) for row in rows[:3])
    return None


def _quoteless(row: sqlite3.Row) -> bool:
    """The stored mark; for a row written before schema 3, the same judgement made now from what it stored."""
    if row["quoteless"] is not None:
        return bool(row["quoteless"])
    return row["state"] == AnnotationState.RELEVANT and bool(row["annotation"]) and \
        quoteless(row["annotation"], row["chunk_text"])


def _meta_json(meta: RetrievalMeta | None) -> str:
    return json.dumps(meta.to_json() if meta else {}, default=str)


def _meta(text: str) -> RetrievalMeta | None:
    data = json.loads(text)
    return RetrievalMeta.from_json(data) if data else None


class HistoryStore:
    """Sessions in `<data_dir>/history.sqlite3`.

    A damaged file (checked on open, or found damaged by any later call) raises
    HistoryDamaged from every method from then on, without touching the file again;
    one that cannot be created or opened (a full disk, a folder in its place) raises
    HistoryUnwritable from every method; a write that fails later raises it once.
    """

    def __init__(self, data_dir: Path | str) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self.unusable: HistoryUnusable | None = None
        try:
            self._open()
        except HistoryUnusable as exc:
            self.unusable = exc
        except (OSError, sqlite3.Error) as exc:
            if (unusable := _unusable(self.path, exc)) is None:
                raise
            self.unusable = unusable

    def _open(self) -> None:
        """The file checked, created or migrated (HistoryError for one of a newer schema)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        problem = _damage(self.path)
        if problem is not None:
            raise HistoryDamaged(self.path, problem)
        with self._connect() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise HistoryError(f"{self.path} has history schema {version}, newer than this ragtui "
                                   f"({SCHEMA_VERSION}); upgrade ragtui")
            conn.execute("PRAGMA journal_mode=WAL")
            if version == 1:
                _migrate_v1(conn)
            elif version in (2, 3):
                _migrate_v2(conn, version)
            else:
                conn.executescript(_SESSIONS.format(name="sessions") + _TURNS + _SOURCES)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if self.unusable is not None:
            raise self.unusable.with_traceback(None)
        try:
            conn = sqlite3.connect(self.path, timeout=10.0)
            try:
                conn.execute("PRAGMA foreign_keys = ON")
                yield conn
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            unusable = _unusable(self.path, exc)
            if unusable is None:
                raise
            if isinstance(unusable, HistoryDamaged):         # never touched again
                self.unusable = unusable
            raise unusable from None

    def save(self, record: Conversation) -> Conversation:
        """Insert or rewrite the conversation, its turns and sources (one transaction); the conversation as stored,
        with its id and times."""
        now = _now()
        record = dataclasses.replace(record, created_at=record.created_at or now, updated_at=now)
        row = {
            "created_at": record.created_at, "updated_at": record.updated_at,
            "collections": json.dumps(list(record.collections)),
            "config": json.dumps(dict(record.config), default=str),
            "synthesis_model": record.synthesis_model, "annotation_model": record.annotation_model,
            "annotation_on": int(record.annotation_on),
            "research": json.dumps(record.research.to_json()) if record.research else "",
        }
        with self._connect() as conn, conn:
            if record.id is None:
                cols = ", ".join(row)
                marks = ", ".join(f":{k}" for k in row)
                inserted = conn.execute(f"INSERT INTO sessions ({cols}) VALUES ({marks})", row)
                record = dataclasses.replace(record, id=cast(int, inserted.lastrowid))   # set after an INSERT
            else:
                sets = ", ".join(f"{k} = :{k}" for k in row)
                cur = conn.execute(f"UPDATE sessions SET {sets} WHERE id = :id", {**row, "id": record.id})
                if cur.rowcount == 0:
                    raise HistoryError(f"session {record.id} no longer exists (deleted?)")
                conn.execute("DELETE FROM turns WHERE session_id = ?", (record.id,))
                conn.execute("DELETE FROM sources WHERE session_id = ?", (record.id,))
            for index, turn in enumerate(record.turns, start=1):
                self._save_turn(conn, cast(int, record.id), index, turn)
        return record

    @staticmethod
    def _save_turn(conn: sqlite3.Connection, session_id: int, index: int, turn: Turn) -> None:
        row = {
            "session_id": session_id, "turn": index, "query": turn.query, "rewrite": turn.rewrite,
            "rewrite_by": turn.rewrite_by, "retrieval_meta": _meta_json(turn.retrieval_meta),
            "rewrite_meta": _meta_json(turn.rewrite_meta), "keyword_only": int(turn.keyword_only),
            "answer": turn.answer, "stop_reason": turn.stop_reason.value, "continuations": turn.continuations,
            "prompt": json.dumps(turn.prompt), "prompt_numbers": json.dumps(turn.prompt_numbers),
            "context_turns": json.dumps(turn.context_turns), "citations": json.dumps(turn.citations),
            "unknown_citations": json.dumps(turn.unknown_citations), "timings": json.dumps(dict(turn.timings)),
            "error": turn.error,
        }
        conn.execute(f"INSERT INTO turns ({', '.join(row)}) VALUES ({', '.join(f':{k}' for k in row)})", row)
        conn.executemany(
            "INSERT INTO sources (session_id, number, turn, chunk_id, chunk_text, chunk_meta, score, rel_score, "
            "legs, state, annotation, error, override, annotated_by, annotation_prompt, evidence, neighbor_of, "
            "distance, quoteless) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(session_id, s.number, index, s.chunk.id, s.chunk.text, json.dumps(s.chunk.meta.to_dict()), s.score,
              s.rel_score, json.dumps(list(s.legs)), s.state.value, s.annotation, s.error, s.override.value,
              s.annotated_by, s.annotation_prompt, json.dumps([[e.leg, e.rank, e.score] for e in s.evidence]),
              s.neighbor_of, s.distance, int(s.quoteless)) for s in turn.sources])

    def load(self, session_id: int) -> Conversation:
        with self._connect() as conn:
            conn.row_factory = sqlite3.Row
            row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise HistoryError(f"no session {session_id} in {self.path}")
            turn_rows = conn.execute("SELECT * FROM turns WHERE session_id = ? ORDER BY turn",
                                     (session_id,)).fetchall()
            source_rows = conn.execute("SELECT * FROM sources WHERE session_id = ? ORDER BY number",
                                       (session_id,)).fetchall()
        by_turn: dict[int, list[SessionSource]] = {}
        for r in source_rows:
            by_turn.setdefault(r["turn"], []).append(SessionSource(
                number=r["number"],
                chunk=Chunk(id=r["chunk_id"], text=r["chunk_text"],
                            meta=ChunkMeta.from_dict(json.loads(r["chunk_meta"]))),
                score=r["score"], rel_score=r["rel_score"], legs=tuple(json.loads(r["legs"])),
                state=AnnotationState(r["state"]), annotation=r["annotation"], error=r["error"],
                override=Override(r["override"]), annotated_by=r["annotated_by"],
                annotation_prompt=r["annotation_prompt"],
                evidence=tuple(LegRank(str(leg), int(rank), float(score))
                               for leg, rank, score in json.loads(r["evidence"])),
                neighbor_of=r["neighbor_of"], distance=r["distance"], quoteless=_quoteless(r)))
        turns = [Turn(
            query=t["query"], rewrite=t["rewrite"], rewrite_by=t["rewrite_by"],
            retrieval_meta=_meta(t["retrieval_meta"]), rewrite_meta=_meta(t["rewrite_meta"]),
            keyword_only=bool(t["keyword_only"]), sources=tuple(by_turn.get(t["turn"], ())), answer=t["answer"],
            stop_reason=StopReason.parse(t["stop_reason"]), continuations=t["continuations"],
            prompt=json.loads(t["prompt"]), prompt_numbers=json.loads(t["prompt_numbers"]),
            context_turns=json.loads(t["context_turns"]), citations=json.loads(t["citations"]),
            unknown_citations=json.loads(t["unknown_citations"]), timings=json.loads(t["timings"]),
            error=t["error"]) for t in turn_rows]
        return Conversation(
            id=row["id"], created_at=row["created_at"], updated_at=row["updated_at"],
            collections=json.loads(row["collections"]), config=json.loads(row["config"]),
            synthesis_model=row["synthesis_model"], annotation_model=row["annotation_model"],
            annotation_on=bool(row["annotation_on"]), turns=tuple(turns),
            research=ResearchRun.from_json(json.loads(row["research"])) if row["research"] else None)

    def list_sessions(self, limit: int | None = None) -> list[SessionSummary]:
        """Newest first; the first question (a research run's question) names the session, the latest turn's
        stop reason and sources count."""
        sql = ("SELECT s.id, s.created_at, "
               "COALESCE(json_extract(NULLIF(s.research, ''), '$.question'), "
               "(SELECT query FROM turns WHERE session_id = s.id ORDER BY turn LIMIT 1)), s.collections, "
               "(SELECT stop_reason FROM turns WHERE session_id = s.id ORDER BY turn DESC LIMIT 1), "
               "(SELECT count(*) FROM sources WHERE session_id = s.id), "
               "(SELECT count(*) FROM sources WHERE session_id = s.id AND "
               " ((state IN ('relevant', 'off') AND override != 'dropped') OR override = 'rescued')), "
               "(SELECT count(*) FROM turns WHERE session_id = s.id) "
               "FROM sessions s ORDER BY s.id DESC")
        with self._connect() as conn:
            rows = conn.execute(sql + (f" LIMIT {int(limit)}" if limit else "")).fetchall()
        return [SessionSummary(id=r[0], created_at=r[1], query=r[2] or "", collections=tuple(json.loads(r[3])),
                               stop_reason=StopReason.parse(r[4] or ""), sources=r[5], relevant=r[6], turns=r[7])
                for r in rows]

    def delete(self, session_id: int) -> bool:
        with self._connect() as conn, conn:
            return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

    def export_markdown(self, session_id: int) -> str:
        return render_markdown(self.load(session_id))


# How the export words a source's standing.
_STANDING_WORDS = {Standing.RESCUED: "rescued by hand", Standing.DROPPED: "dropped by hand",
                   Standing.RELEVANT: "relevant", Standing.NO_QUOTE: "relevant, with no quote from it",
                   Standing.IRRELEVANT: "filtered as irrelevant",
                   Standing.FAILED: "annotation failed", Standing.OFF: "not annotated",
                   Standing.NOT_ANNOTATED: "not annotated", Standing.RUNNING: "not annotated"}


def annotation_origin(source: SessionSource, *, short: bool = False) -> str:
    """`by MODEL with PROMPT` for an annotated source ("" when nobody annotated it); `short`: the model's display
    name (`model_ids.short_name`), for a line that lists many sources."""
    if not source.annotated_by:
        return ""
    model = short_name(source.annotated_by) if short else source.annotated_by
    return f"by {model} with {source.annotation_prompt or 'the default prompt'}"


def render_markdown(record: Conversation) -> str:
    """The conversation as Markdown: per turn the question, the answer and its sources numbered as cited."""
    lines = [f"# {record.query}", "",
             f"- Session: {record.id}, {record.created_at}",
             f"- Collections: {', '.join(record.collections) or '(none)'}",
             f"- Models: synthesis {record.synthesis_model or '-'}, "
             f"annotation {record.annotation_model if record.annotation_on else 'off'}",
             f"- Turns: {len(record.turns)}", ""]
    if record.research is not None:
        lines += _render_plan(record.research)
    many = len(record.turns) > 1
    for index, turn in enumerate(record.turns, start=1):
        report = record.research is not None and index == record.research.report_turn
        lines += _render_turn(index, turn, many, report=report)
    return "\n".join(lines).rstrip() + "\n"


def _render_plan(run: ResearchRun) -> list[str]:
    """A research run's plan with each sub-question's state and kept sources, its rounds, limits and cost."""
    cost = run.cost
    lines = ["## Research plan", "", f"- Planned by: {run.planned_by or '-'}; rounds: {run.rounds}",
             f"- Cost: {cost.model_calls} model calls, {cost.tokens} tokens, {cost.seconds:.1f} s"
             + (f"; limits reached: {', '.join(limit.value for limit in run.limits_hit)}" if run.limits_hit else ""),
             ""]
    for i, sub in enumerate(run.plan, start=1):
        searched = f", searched in turn {', '.join(str(t) for t in sub.turns)}" if sub.turns else ""
        lines.append(f"{i}. {sub.text} — {sub.state.value}, {sub.kept} source(s) kept{searched}")
    return [*lines, ""]


def _render_turn(index: int, turn: Turn, many: bool, *, report: bool = False) -> list[str]:
    head = "###" if many else "##"
    lines: list[str] = []
    if many:
        lines += [f"## Turn {index}: {turn.query}", ""]
    if turn.rewrite:
        lines += [f"- Retrieved as typed and as: {turn.rewrite} (rewrite by {turn.rewrite_by or '-'})"]
    lines += [f"- Stop reason: {turn.stop_reason or '-'}"
              + (f" (continued {turn.continuations} time{'s' if turn.continuations != 1 else ''})"
                 if turn.continuations else ""), ""]
    lines += [f"{head} Answer", "", turn.answer.strip() or "_No answer._", ""]
    if turn.unknown_citations:
        lines += [f"> Cited but not among the sources given to the model: "
                  f"{', '.join(f'[{n}]' for n in turn.unknown_citations)}", ""]
    lines += [f"{head} Sources", ""]
    for s in turn.sources:
        cited = " — cited" if s.number in turn.citations else ""
        near = f", neighbour of [{s.neighbor_of}] at distance {s.distance}" if s.neighbor_of else ""
        lines.append(f"{s.number}. **{s.chunk.label}** — score {s.score:.3f} (relative {s.rel_score:.2f}), "
                     f"{'+'.join(s.legs) or '-'}{near}, {_STANDING_WORDS[s.standing]}{cited}")
        if s.annotation:
            origin = annotation_origin(s)
            if origin:
                lines.append(f"   > annotated {origin}:")
            lines += [f"   > {line}" if line.strip() else "   >" for line in s.annotation.strip().splitlines()]
            if s.misquoted:
                lines.append("   > (the quote above is not in this source's text: not a real quote)")
            elif s.quote_page:
                lines.append(f"   > (quoted from page {s.quote_page})")
        if s.error:
            lines.append(f"   > annotation error: {s.error}")
    if report:
        lines.append("_The report is written from the kept sources of the searches above._")
    elif not turn.sources:
        lines.append("_No sources were retrieved._")
    lines.append("")
    return lines
