"""A multi-hop question set with its evidence documents and distractors, in BEIR format, from HotpotQA.

    python -m benchmarks.multihop_set hotpot_dev_distractor_v1.json benchmarks/data/hotpotqa-sample [--limit N]

HotpotQA (Yang, Qi, Zhang, Bengio, Cohen, Salakhutdinov, Manning, "HotpotQA: A
Dataset for Diverse, Explainable Multi-hop Question Answering", EMNLP 2018;
CC BY-SA 4.0, like the Wikipedia text it carries) holds questions that need two
Wikipedia paragraphs each: "bridge" questions, where the first paragraph names
the entity the second one answers about ("What government position was held by
the woman who portrayed Corliss Archer in the film Kiss and Tell?"), and
"comparison" questions, which ask the same thing of two entities ("Were Scott
Derrickson and Ed Wood of the same nationality?"). In the distractor setting
each question comes with its two gold paragraphs and eight distractors that a
bigram search over Wikipedia found for it, so every question has near misses
in the corpus.

The input is the release's dev file (a JSON list of questions: `_id`,
`question`, `answer`, `type`, `level`, `supporting_facts` as [title, sentence]
pairs, `context` as [title, sentences] pairs), whole or cut short (a copy cut
mid-record: every complete record before the cut is read), or a Hugging Face
`datasets` export of it written as JSON records (`context` and
`supporting_facts` as columns: {"title": [...], "sentences": [...]}).

What the folder holds:
- corpus.jsonl: one document per Wikipedia paragraph of every question's
  context (gold and distractors), titled with its page's title, its sentences
  joined as HotpotQA wrote them; a paragraph shared by several questions is
  one document;
- queries.jsonl: every question as written; `metadata.answers` holds its one
  reference answer, `metadata.type` and `metadata.level` HotpotQA's labels,
  `metadata.evidence` the titles of its supporting paragraphs;
- qrels/test.tsv: each question's supporting paragraphs (grade 1), the
  evidence documents a run should keep.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import beir_folder


def records(path: Path) -> Iterator[dict[str, Any]]:
    """Each complete question of a JSON list (or of JSON records one after another), stopping at a record cut
    short."""
    text = path.read_text(encoding="utf-8")
    decoder, at = json.JSONDecoder(), 0
    at = _skip(text, at, "[")
    while at < len(text) and text[at] != "]":
        try:
            record, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return                                   # the copy ends mid-record
        yield record
        at = _skip(text, at, ",")


def _skip(text: str, at: int, mark: str) -> int:
    while at < len(text) and (text[at].isspace() or text[at] == mark):
        at += 1
    return at


def pairs(field: Any, second: str) -> list[tuple[str, Any]]:
    """The release's [title, value] pairs, or the columnar export's {"title": [...], second: [...]}."""
    if isinstance(field, dict):
        return list(zip(field["title"], field[second], strict=True))
    return [(title, value) for title, value in field]


def build(source: Path, out: Path, limit: int | None = None) -> dict[str, int]:
    ids: dict[str, str] = {}
    corpus, queries, qrels = [], [], []
    counts = {"questions": 0, "bridge": 0, "comparison": 0, "documents": 0}
    for question in records(source):
        if limit is not None and counts["questions"] >= limit:
            break
        context = pairs(question["context"], "sentences")
        for title, sentences in context:
            if title not in ids:
                ids[title] = f"hp{len(ids) + 1:04d}"
                corpus.append({"_id": ids[title], "title": title, "text": "".join(sentences).strip()})
        evidence = list(dict.fromkeys(title for title, _ in pairs(question["supporting_facts"], "sent_id")))
        qid = str(question.get("_id") or question.get("id"))
        counts["questions"] += 1
        counts[question.get("type", "")] = counts.get(question.get("type", ""), 0) + 1
        queries.append({"_id": qid, "text": question["question"].strip(),
                        "metadata": {"answers": [question["answer"].strip()], "type": question.get("type", ""),
                                     "level": question.get("level", ""), "evidence": evidence}})
        qrels += [(qid, ids[title]) for title in evidence]
    counts["documents"] = len(corpus)
    beir_folder.write(out, corpus, queries, qrels)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("source", type=Path, help="HotpotQA JSON (the release's dev file, or a datasets export)")
    parser.add_argument("out", type=Path, help="the BEIR folder to write")
    parser.add_argument("--limit", type=int, help="the first N questions only")
    args = parser.parse_args()
    print(json.dumps(build(args.source, args.out, args.limit)))


if __name__ == "__main__":
    main()
