"""A long-form question-answering set with unanswerable questions, in BEIR format, from QASPER.

    python -m benchmarks.qasper_set QASPER.json benchmarks/data/qasper-sample

QASPER (Dasigi et al., "A Dataset of Information-Seeking Questions and Answers
Anchored in Research Papers", NAACL 2021; CC BY 4.0) holds questions that NLP
practitioners wrote after reading a paper's title and abstract, answered by
others from the full text: a free-form answer, extractive spans, yes/no, or
"unanswerable", each with the evidence paragraphs. The input is either the
release's layout (`qasper-dev-v0.3.json`: paper id -> paper) or the Hugging Face
conversion written as JSON records (a `datasets` export: one object per paper,
`full_text` and `qas` as columns).

What the folder holds:
- corpus.jsonl: one document per non-empty paragraph of every paper, titled
  "paper title: section"; figures and tables ("FLOAT SELECTED") are not text;
- queries.jsonl: every question, prefixed with its paper's title in quotes,
  since one collection holds several papers and a question such as "Which
  datasets did they use?" names none; `metadata.answers` holds one reference
  per annotator who answered (the free-form answer, else the extractive spans
  joined by ", ", else "Yes" / "No"); a question every annotator marked
  unanswerable has `answers: []`;
- qrels/test.tsv: each answerable question's evidence paragraphs (grade 1).
  A question answered by some annotators and marked unanswerable by others is
  answerable; one whose evidence is only figures or tables has no judged
  paragraph and is left out (the script prints how many).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import beir_folder


def papers(path: Path) -> Iterator[dict[str, Any]]:
    """Each paper as {id, title, sections: [(name, [paragraph])], qas: [{question, question_id, answers}]}."""
    text = path.read_text(encoding="utf-8")
    decoder, at, records = json.JSONDecoder(), 0, []
    while at < len(text):
        while at < len(text) and text[at].isspace():
            at += 1
        if at < len(text):
            record, at = decoder.raw_decode(text, at)
            records.append(record)
    if len(records) == 1 and isinstance(records[0], dict) and "qas" not in records[0]:
        records = [{"id": key, **paper} for key, paper in records[0].items()]     # the release's layout
    for paper in records:
        full, qas = paper["full_text"], paper["qas"]
        if isinstance(full, dict):                                                # the columnar conversion
            full = [{"section_name": n, "paragraphs": p} for n, p in zip(full["section_name"], full["paragraphs"],
                                                                          strict=True)]
            qas = [{"question": q, "question_id": i, "answers": [{"answer": a} for a in answers["answer"]]}
                   for q, i, answers in zip(qas["question"], qas["question_id"], qas["answers"], strict=True)]
        yield {"id": paper["id"], "title": paper["title"],
               "sections": [(s["section_name"] or "", s["paragraphs"]) for s in full], "qas": qas}


def reference(answer: dict[str, Any]) -> str:
    if answer.get("free_form_answer", "").strip():
        return answer["free_form_answer"].strip()
    if answer.get("extractive_spans"):
        return ", ".join(s.strip() for s in answer["extractive_spans"] if s.strip())
    if answer.get("yes_no") is not None:
        return "Yes" if answer["yes_no"] else "No"
    return ""


def build(source: Path, out: Path) -> dict[str, int]:
    corpus, queries, qrels = [], [], []
    counts = {"papers": 0, "paragraphs": 0, "answerable": 0, "unanswerable": 0, "evidence_not_text": 0}
    for paper in papers(source):
        counts["papers"] += 1
        ids: dict[str, str] = {}
        for name, paragraphs in paper["sections"]:
            for paragraph in paragraphs:
                text = paragraph.strip()
                if text and text not in ids:
                    ids[text] = f"{paper['id']}-p{len(ids) + 1}"
                    corpus.append({"_id": ids[text], "title": f"{paper['title']}: {name.replace(':::', '>')}",
                                   "text": text})
        for qa in paper["qas"]:
            given = [a["answer"] for a in qa["answers"]]
            answered = [a for a in given if not a["unanswerable"]]
            question = f'In "{paper["title"]}": {qa["question"].strip()}'
            if not answered:
                counts["unanswerable"] += 1
                queries.append({"_id": qa["question_id"], "text": question, "metadata": {"answers": []}})
                continue
            evidence = list(dict.fromkeys(ids[e.strip()] for a in answered for e in a["evidence"]
                                          if e.strip() in ids))
            if not evidence:
                counts["evidence_not_text"] += 1
                continue
            counts["answerable"] += 1
            references = list(dict.fromkeys(r for a in answered if (r := reference(a))))
            queries.append({"_id": qa["question_id"], "text": question, "metadata": {"answers": references}})
            qrels += [(qa["question_id"], doc) for doc in evidence]
    counts["paragraphs"] = len(corpus)
    beir_folder.write(out, corpus, queries, qrels)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("source", type=Path, help="QASPER JSON (the release's or a Hugging Face export)")
    parser.add_argument("out", type=Path, help="the BEIR folder to write")
    args = parser.parse_args()
    print(json.dumps(build(args.source, args.out)))


if __name__ == "__main__":
    main()
