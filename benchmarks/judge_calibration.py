"""The judge's calibration set: answers to QASPER dev questions whose right label is known by construction.

    python -m benchmarks.judge_calibration QUESTIONS.json ragtui/evaluation/judge_calibration.jsonl

The input is QASPER's dev questions with their extractive answers and evidence
(Dasigi et al., NAACL 2021; CC BY 4.0), as a JSON object question id ->
{article_id, text, extractive_spans, evidence, highlighted_evidence} (the layout
of data/dev_question_dict.json in github.com/lekhang4497/qasper-retriever-reader,
MIT, built from qasper-dev-v0.3.json). The eval set (benchmarks/qasper_set.py)
comes from QASPER's train papers, so no question is in both.

Each row is (question, reference answer, candidate answer, label), the candidate
made so that its label holds:
- right: a question with one extractive answer; the candidate is the evidence
  sentence the annotator highlighted that holds it (a long answer that says it);
- partly: a question with two or more answers none of which holds another; the
  reference lists them, the candidate names only the first;
- wrong: the highlighted sentence of a question about another paper;
- abstained: a plain statement that the sources do not answer.
The labels are constructions, not people's verdicts on model answers: the set
measures whether a judge tells these four cases apart, which is the least a
judge of answers must do.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

COUNTS = {"right": 16, "partly": 10, "wrong": 16, "abstained": 8}
ABSTENTIONS = ("The sources do not answer this question.", "The provided sources do not say.",
               "I cannot find this in the sources.", "The sources do not mention it, so I cannot answer.")


def _highlight_with(row: dict, span: str) -> str | None:
    return next((h.strip() for h in row["highlighted_evidence"] if span in h and len(h.split()) >= 8), None)


def build(source: Path, seed: int = 7) -> list[dict[str, str]]:
    questions = json.loads(source.read_text(encoding="utf-8"))
    rng = random.Random(seed)
    ids = sorted(questions)
    rng.shuffle(ids)
    rows: list[dict[str, str]] = []
    wanted = dict(COUNTS)
    used: set[str] = set()

    def add(qid: str, reference: str, answer: str, label: str) -> None:
        row = questions[qid]
        rows.append({"id": f"qasper-dev:{qid}:{label}", "question": row["text"].strip(), "reference": reference,
                     "answer": answer, "label": label})
        used.add(qid)
        wanted[label] -= 1

    for qid in ids:
        row = questions[qid]
        spans = list(dict.fromkeys(s.strip() for s in row["extractive_spans"] if s.strip()))
        if len(spans) == 1 and wanted["right"] and (sentence := _highlight_with(row, spans[0])):
            add(qid, spans[0], sentence, "right")
        elif len(spans) >= 2 and wanted["partly"] and not any(a != b and a in b for a in spans for b in spans):
            add(qid, ", ".join(spans), f"{spans[0]}.", "partly")
    for qid in ids:
        row = questions[qid]
        spans = [s.strip() for s in row["extractive_spans"] if s.strip()]
        if qid in used or not spans:
            continue
        if wanted["wrong"]:
            other = next(questions[o] for o in ids if questions[o]["article_id"] != row["article_id"]
                         and o not in used and questions[o]["highlighted_evidence"])
            add(qid, ", ".join(spans), other["highlighted_evidence"][0].strip(), "wrong")
        elif wanted["abstained"]:
            add(qid, ", ".join(spans), ABSTENTIONS[wanted["abstained"] % len(ABSTENTIONS)], "abstained")
    rng.shuffle(rows)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    rows = build(args.source)
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
