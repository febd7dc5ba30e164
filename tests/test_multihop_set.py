"""benchmarks/multihop_set.py: HotpotQA's dev file, whole, cut short or as a `datasets` export, becomes a BEIR
folder that `ragtui eval`'s loader reads; and the committed sample is what its README says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ragtui.evaluation.beir import load_dataset

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "benchmarks" / "data" / "hotpotqa-sample"

BRIDGE = {"_id": "q-bridge", "question": "Which country was the author of Book A born in?", "answer": "France",
          "type": "bridge", "level": "hard",
          "supporting_facts": [["Book A", 0], ["Ann Author", 1], ["Ann Author", 0]],
          "context": [["Book A", ["Book A is a novel", " by Ann Author."]],
                      ["Ann Author", ["Ann Author is a writer.", " She was born in France."]],
                      ["Noise", ["Nothing here."]]]}
COMPARISON = {"_id": "q-comparison", "question": "Are Book A and Book B both novels?", "answer": "yes",
              "type": "comparison", "level": "hard", "supporting_facts": [["Book A", 0], ["Book B", 0]],
              "context": [["Book B", ["Book B is a novel."]], ["Book A", ["Book A is a novel", " by Ann Author."]]]}


def build(tmp_path: Path, source: str, *extra: str) -> Path:
    tmp_path.mkdir(exist_ok=True)
    given, out = tmp_path / "hotpot.json", tmp_path / "set"
    given.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "benchmarks.multihop_set", str(given), str(out), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def test_the_release_file_cut_mid_record_keeps_every_complete_question(tmp_path: Path) -> None:
    whole = json.dumps([BRIDGE, COMPARISON, BRIDGE | {"_id": "q-third"}])
    out = build(tmp_path, whole[:whole.index('"q-third"') + 20])      # a copy that stops inside the third record

    dataset = load_dataset(out)
    assert list(dataset.queries) == ["q-bridge", "q-comparison"]
    assert dataset.answers == {"q-bridge": ["France"], "q-comparison": ["yes"]}
    titles = {doc.id: doc.title for doc in dataset.corpus.values()}
    assert sorted(titles.values()) == ["Ann Author", "Book A", "Book B", "Noise"]   # Book A once, though in both
    assert {titles[d] for d in dataset.qrels["q-bridge"]} == {"Book A", "Ann Author"}
    assert {titles[d] for d in dataset.qrels["q-comparison"]} == {"Book A", "Book B"}
    author = next(doc for doc in dataset.corpus.values() if doc.title == "Ann Author")
    assert author.text == "Ann Author is a writer. She was born in France."
    rows = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    assert rows[0]["metadata"] == {"answers": ["France"], "type": "bridge", "level": "hard",
                                        "evidence": ["Book A", "Ann Author"]}


def test_a_datasets_export_gives_the_same_folder(tmp_path: Path) -> None:
    def columnar(record: dict) -> dict:
        return {"id": record["_id"], **{k: record[k] for k in ("question", "answer", "type", "level")},
                "supporting_facts": {"title": [t for t, _ in record["supporting_facts"]],
                                     "sent_id": [i for _, i in record["supporting_facts"]]},
                "context": {"title": [t for t, _ in record["context"]],
                            "sentences": [s for _, s in record["context"]]}}

    release = build(tmp_path / "a", json.dumps([BRIDGE, COMPARISON]))
    export = build(tmp_path / "b", "\n".join(json.dumps(columnar(r)) for r in (BRIDGE, COMPARISON)))
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (export / name).read_text() == (release / name).read_text()


def test_limit_takes_the_first_questions(tmp_path: Path) -> None:
    out = build(tmp_path, json.dumps([BRIDGE, COMPARISON]), "--limit", "1")
    assert list(load_dataset(out).queries) == ["q-bridge"]
    assert len(load_dataset(out).corpus) == 3


def test_the_committed_sample_matches_its_readme() -> None:
    dataset = load_dataset(SAMPLE)
    rows = [json.loads(line) for line in (SAMPLE / "queries.jsonl").read_text().splitlines()]
    assert (len(dataset.queries), len(dataset.corpus)) == (53, 521)
    assert sum(r["metadata"]["type"] == "bridge" for r in rows) == 39
    assert all(len(dataset.answers[q]) == 1 and len(dataset.qrels[q]) == 2 for q in dataset.queries)
    for row in rows:            # each evidence title is the title of one of its judged documents
        judged = {dataset.corpus[d].title for d in dataset.qrels[row["_id"]]}
        assert judged == set(row["metadata"]["evidence"])
