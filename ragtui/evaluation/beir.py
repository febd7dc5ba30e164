"""BEIR-format datasets: corpus.jsonl, queries.jsonl, qrels/test.tsv (Thakur et al. 2021)."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ragtui.errors import RagtuiError


class DatasetError(RagtuiError):
    """The folder is not a readable BEIR dataset; the message names the file (a usage error: exit 2)."""

    exit_code = 2


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str

    @property
    def content(self) -> str:
        """What gets indexed: the title prefixed to the text (BEIR convention), or the text alone.

        Underscores in titles become spaces: SQuAD titles are Wikipedia page names
        ("Super_Bowl_50"), which Whoosh's tokenizer would keep as one token.
        """
        return f"{self.title.replace('_', ' ')}\n{self.text}" if self.title else self.text


@dataclass
class Dataset:
    name: str
    corpus: dict[str, Document]
    queries: dict[str, str]             # only the queries with judgements, in qrels order
    qrels: dict[str, dict[str, int]]    # query id -> {doc id: grade > 0}
    # query id -> reference answers (a query's metadata.answers, as SQuAD's conversion carries them)
    answers: dict[str, list[str]] = field(default_factory=dict)
    # query id -> text: the questions the corpus does not answer (metadata.answers is an empty list, no qrels)
    unanswerable: dict[str, str] = field(default_factory=dict)

    def limited(self, limit: int | None) -> Dataset:
        """The first `limit` judged queries in qrels order, and the first unanswerable ones in the same proportion
        to them as in the whole set, at least one when there are any (the corpus stays whole)."""
        if not limit or limit >= len(self.queries):
            return self
        ids = list(self.queries)[:limit]
        share = math.ceil(len(self.unanswerable) * limit / len(self.queries))
        return Dataset(self.name, self.corpus, {q: self.queries[q] for q in ids}, {q: self.qrels[q] for q in ids},
                       {q: self.answers[q] for q in ids if q in self.answers},
                       dict(list(self.unanswerable.items())[:share]))


def _is_file(path: Path) -> bool:
    """Path.is_file() that says False, instead of raising, for a name too long or not encodable."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _jsonl(path: Path) -> list[dict]:
    if not _is_file(path):
        raise DatasetError(f"{path}: missing (a BEIR dataset has corpus.jsonl, queries.jsonl, qrels/test.tsv)")
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"{path}:{n}: not JSON ({exc.msg})") from None
    return rows


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Judgements with a positive grade, in file order; the header row is skipped."""
    if not _is_file(path):
        raise DatasetError(f"{path}: missing")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        for row in csv.reader(fh, delimiter="\t"):
            if len(row) < 3 or row[0] == "query-id":
                continue
            try:
                grade = int(float(row[2]))
            except ValueError:
                raise DatasetError(f"{path}: bad grade {row[2]!r} for query {row[0]}") from None
            if grade > 0:
                qrels.setdefault(row[0], {})[row[1]] = grade
    return qrels


def load_dataset(folder: Path) -> Dataset:
    """Read a BEIR folder, keeping only queries that have at least one relevant document in test.tsv."""
    corpus = {str(r["_id"]): Document(str(r["_id"]), r.get("title") or "", r.get("text") or "")
              for r in _jsonl(folder / "corpus.jsonl")}
    rows = _jsonl(folder / "queries.jsonl")
    all_queries = {str(r["_id"]): r.get("text") or "" for r in rows}
    answers = {str(r["_id"]): found for r in rows if (found := reference_answers(r))}
    qrels = read_qrels(folder / "qrels" / "test.tsv")
    missing = [q for q in qrels if q not in all_queries]
    if missing:
        raise DatasetError(f"{folder}: qrels name {len(missing)} unknown query ids, e.g. {missing[0]}")
    unanswerable = {str(r["_id"]): all_queries[str(r["_id"])] for r in rows
                    if str(r["_id"]) not in qrels and declared_unanswerable(r)}
    return Dataset(folder.name, corpus, {q: all_queries[q] for q in qrels}, qrels,
                   {q: answers[q] for q in qrels if q in answers}, unanswerable)


def declared_unanswerable(row: dict) -> bool:
    """Whether a query row says the corpus does not answer it: `metadata.answers` is there and empty (a row with
    no answers key says nothing)."""
    metadata = row.get("metadata")
    return isinstance(metadata, dict) and metadata.get("answers") == [] and bool(str(row.get("text") or "").strip())


def reference_answers(row: dict) -> list[str]:
    """A query row's `metadata.answers`: the strings among them (anything else there is ignored)."""
    metadata = row.get("metadata")
    found = metadata.get("answers") if isinstance(metadata, dict) else None
    return [a for a in found if isinstance(a, str) and a.strip()] if isinstance(found, list) else []
