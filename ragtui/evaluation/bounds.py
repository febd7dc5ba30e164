"""The floor and ceiling of each answer metric, measured on the same questions, so a score is read between them.

- floor: another question's reference answer given as the answer (the next
  answerable question in the run's order whose judged passages differ): what a
  fluent, on-topic-looking answer to the wrong question scores;
- ceiling, passage: the question's gold passage itself (its first judged-relevant
  document's text) given as the answer: what a faithful copy of the evidence scores;
- ceiling, second reference: where a question has two or more references, the
  second given as the answer and scored against the others: what a person scores.

A metric scoring the floor close to the ceiling cannot tell a right answer from a
wrong one on that set. The annotator's precision has a floor of its own: the
precision of keeping every annotated source, that is the retrieval's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragtui.evaluation.answer_metrics import TEXT_METRICS, text_scores
from ragtui.evaluation.beir import Dataset

BOUNDS = ("floor", "passage", "second_reference")


@dataclass(frozen=True)
class BoundAnswer:
    answer: str
    references: list[str]


def bound_answers(dataset: Dataset, qids: Sequence[str]) -> dict[str, dict[str, BoundAnswer]]:
    """Bound -> question id -> the answer standing in for the product's, and the references it is scored against."""
    out: dict[str, dict[str, BoundAnswer]] = {b: {} for b in BOUNDS}
    answerable = [q for q in qids if dataset.answers.get(q)]
    for i, qid in enumerate(answerable):
        references = dataset.answers[qid]
        grades = dataset.qrels.get(qid, {})
        other = next((o for o in answerable[i + 1:] + answerable[:i]
                      if not set(dataset.qrels.get(o, {})) & set(grades)), None)
        if other is not None:
            out["floor"][qid] = BoundAnswer(dataset.answers[other][0], references)
        gold = max(grades, key=lambda d: grades[d], default=None)
        if gold is not None and gold in dataset.corpus:
            out["passage"][qid] = BoundAnswer(dataset.corpus[gold].text, references)
        if len(references) > 1:
            out["second_reference"][qid] = BoundAnswer(references[1], [references[0], *references[2:]])
    return out


def score_bounds(answers: Mapping[str, Mapping[str, BoundAnswer]]) -> dict[str, dict[str, dict[str, float]]]:
    """Metric -> bound -> question id -> the text metric of that bound's answer."""
    out: dict[str, dict[str, dict[str, float]]] = {m: {b: {} for b in answers} for m in TEXT_METRICS}
    for bound, by_question in answers.items():
        for qid, stand_in in by_question.items():
            for metric, value in text_scores(stand_in.answer, stand_in.references).items():
                out[metric][bound][qid] = value
    return out
