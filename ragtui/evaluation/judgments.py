"""Relevance judgments from the saved research sessions: the qrels of `ragtui eval --from-history` and
`ragtui history judgments`.

Every source of every turn is judged by what happened to it, the user's own act first:

    kind      grade  when
    rescued   2      the user put a filtered source back into the answer's sources
    dropped   0      the user took a source out of them
    cited     2      the answer cites it and it is still among the answer's sources (kept by the
                     annotator, or annotation was off or did not reach it)
    kept      1      weak: the annotator judged it relevant and the answer does not cite it
    filtered  0      weak: the annotator judged it irrelevant and the user did not rescue it

A failed annotation, or a source nobody annotated that the answer does not cite, judges nothing.
`kept` and `filtered` are weak labels: verdicts of the annotating model that the user may never
have looked at. They count only when asked for (`weak=True`); the user's acts and the citations
of the answer the user read always count.

A question is the turn's standalone rewrite when it has one (a follow-up's typed words alone
may mean nothing), else the question as typed; the same question over the same collections in
several sessions is one query, its id a hash of the two. One chunk judged more than once for a
query keeps the strongest judgment (the user's act, then a citation, then the annotator's),
the latest of equals.

A chunk is named by its collection, its file and a hash of its text (whitespace collapsed),
not by its chunk id, which names a position in the file: the judgment survives a re-ingest
that cuts the same text, and one whose text no longer exists in the collection (the file
changed, the chunking changed, the collection was deleted) is reported as missing, not lost.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Collection as Container
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from ragtui.model.chunks import Chunk
from ragtui.model.conversation import AnnotationState, Conversation, Override, SessionSource, Turn

if TYPE_CHECKING:
    from ragtui.history import HistoryStore
    from ragtui.workspace import Workspace


class Kind(StrEnum):
    RESCUED = "rescued"
    DROPPED = "dropped"
    CITED = "cited"
    KEPT = "kept"
    FILTERED = "filtered"


GRADES = {Kind.RESCUED: 2, Kind.CITED: 2, Kind.KEPT: 1, Kind.DROPPED: 0, Kind.FILTERED: 0}
WEAK = frozenset({Kind.KEPT, Kind.FILTERED})
# Which of two judgments of one chunk for one query stands: the higher (then the later) one.
_STRENGTH = {Kind.RESCUED: 2, Kind.DROPPED: 2, Kind.CITED: 1, Kind.KEPT: 0, Kind.FILTERED: 0}


def judge(source: SessionSource, turn: Turn) -> Kind | None:
    """What a source's fate in its turn says of its relevance to the turn's question (None: nothing)."""
    if source.override is Override.RESCUED:
        return Kind.RESCUED
    if source.override is Override.DROPPED:
        return Kind.DROPPED
    if source.state is AnnotationState.IRRELEVANT:
        return Kind.FILTERED
    if source.state is AnnotationState.FAILED:
        return None
    if source.number in turn.citations:
        return Kind.CITED
    return Kind.KEPT if source.state is AnnotationState.RELEVANT else None


def text_hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


def chunk_key(chunk: Chunk) -> str:
    """`collection/file#texthash`, percent-encoded (no tab, newline or space in a qrels field)."""
    return f"{quote(chunk.meta.collection, safe='')}/{quote(chunk.meta.source, safe='/')}#{text_hash(chunk.text)}"


def query_id(text: str, collections: Sequence[str]) -> str:
    key = " ".join(text.casefold().split()) + "\0" + "\0".join(sorted(collections))
    return "h" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Judgment:
    query_id: str
    doc_id: str                 # chunk_key of the judged chunk
    kind: Kind
    session: int
    turn: int
    number: int                 # the source's [N] in its session
    label: str                  # `collection/file [p.N]`, for listings

    @property
    def grade(self) -> int:
        return GRADES[self.kind]

    @property
    def weak(self) -> bool:
        return self.kind in WEAK


@dataclass(frozen=True)
class JudgedQuery:
    id: str
    text: str
    collections: tuple[str, ...]
    asked: tuple[str, ...]      # "session.turn" of each time it was asked


@dataclass(frozen=True)
class Judgments:
    queries: dict[str, JudgedQuery]
    judgments: tuple[Judgment, ...]     # the one that stands per (query, chunk), in the order first judged
    unjudged: int                       # sources whose fate judges nothing
    sessions: int

    def counts(self) -> Counter[Kind]:
        return Counter(j.kind for j in self.judgments)

    def used(self, weak: bool) -> list[Judgment]:
        return [j for j in self.judgments if weak or not j.weak]

    def qrels(self, weak: bool, leave_out: Container[str] = ()) -> dict[str, dict[str, int]]:
        """Query id -> {chunk key: grade > 0} (the metrics' judgments), without the chunks in `leave_out`; a
        query with no relevant chunk left is not there."""
        qrels: dict[str, dict[str, int]] = {}
        for j in self.used(weak):
            if j.grade > 0 and j.doc_id not in leave_out:
                qrels.setdefault(j.query_id, {})[j.doc_id] = j.grade
        return qrels


def conversations(store: HistoryStore, collections: Sequence[str] = ()) -> Iterator[Conversation]:
    """The saved sessions, oldest first; with `collections`, only those that searched one of them."""
    for summary in reversed(store.list_sessions()):
        if not collections or set(summary.collections) & set(collections):
            yield store.load(summary.id)


def collect(sessions: Iterable[Conversation], collections: Sequence[str] = ()) -> Judgments:
    """The judgments of these sessions' sources; with `collections`, only of the sessions that searched one of
    them and of the chunks in them."""
    queries: dict[str, JudgedQuery] = {}
    standing: dict[tuple[str, str], Judgment] = {}
    unjudged = count = 0
    for conversation in sessions:
        searched = tuple(c for c in conversation.collections if not collections or c in collections)
        if not searched:
            continue
        count += 1
        for index, turn in enumerate(conversation.turns, start=1):
            text = turn.rewrite or turn.query
            qid = query_id(text, searched)
            asked = f"{conversation.id}.{index}"
            for source in turn.sources:
                if collections and source.chunk.meta.collection not in collections:
                    continue
                kind = judge(source, turn)
                if kind is None:
                    unjudged += 1
                    continue
                if qid not in queries:
                    queries[qid] = JudgedQuery(qid, text, searched, ())
                query = queries[qid]
                if asked not in query.asked:
                    queries[qid] = JudgedQuery(qid, query.text, searched, (*query.asked, asked))
                judgment = Judgment(qid, chunk_key(source.chunk), kind, conversation.id or 0, index,
                                    source.number, source.chunk.label)
                earlier = standing.get((qid, judgment.doc_id))
                if earlier is None or _STRENGTH[kind] >= _STRENGTH[earlier.kind]:
                    standing[(qid, judgment.doc_id)] = judgment
    return Judgments(queries, tuple(standing.values()), unjudged, count)


def missing(workspace: Workspace, judgments: Iterable[Judgment]) -> dict[str, str]:
    """Chunk key -> why, for each judged chunk whose text its collection no longer holds (the file changed or
    was re-chunked, or the collection is gone or cannot be read). Reads the collections' records only."""
    from ragtui.library import CollectionError

    wanted: dict[str, dict[str, set[str]]] = {}      # collection -> file -> keys
    for j in judgments:
        collection, rest = j.doc_id.split("/", 1)
        wanted.setdefault(collection, {}).setdefault(rest.rsplit("#", 1)[0], set()).add(j.doc_id)
    gone: dict[str, str] = {}
    for collection, files in wanted.items():
        try:
            chunks = _chunks_of(workspace, unquote(collection), [unquote(f) for f in files])
        except CollectionError as exc:
            gone.update((key, str(exc)) for keys in files.values() for key in keys)
            continue
        present = {chunk_key(c) for c in chunks}
        gone.update((key, "its text is no longer in the collection (the file changed or was ingested "
                          "with other chunking since)")
                    for keys in files.values() for key in keys if key not in present)
    return gone


def _chunks_of(workspace: Workspace, name: str, files: Sequence[str]) -> list[Chunk]:
    """Every chunk of these files in collection `name`; CollectionError (gone, damaged) when it cannot say."""
    collection = workspace.collection(name)
    try:
        return collection.records.chunks_of(files)
    except Exception as exc:  # a damaged records file can make SQLite raise any of its errors
        raise collection.unreadable(exc, store="records.sqlite3") from None


def write_beir(judgments: Judgments, weak: bool, path: Path) -> tuple[Path, int, int]:
    """The judgments as BEIR qrels at `path` (TSV: query-id, corpus-id, score, with the header; grade 0 rows are
    the judged not relevant) and their queries beside it (`<name>.queries.jsonl`: _id, text, metadata with the
    collections and the session.turn it was asked in); (queries path, rows, queries)."""
    used = judgments.used(weak)
    qids = list(dict.fromkeys(j.query_id for j in used))
    rows = ["query-id\tcorpus-id\tscore", *(f"{j.query_id}\t{j.doc_id}\t{j.grade}" for j in used)]
    queries_path = path.with_name(path.stem + ".queries.jsonl")
    lines = [json.dumps({"_id": q, "text": judgments.queries[q].text,
                         "metadata": {"collections": list(judgments.queries[q].collections),
                                      "asked": list(judgments.queries[q].asked)}}, ensure_ascii=False)
             for q in qids]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    queries_path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return queries_path, len(used), len(qids)
