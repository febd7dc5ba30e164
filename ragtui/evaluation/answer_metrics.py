"""Scores of one answered question: annotation as a relevance filter, answer correctness, citations, cost.

Answer correctness uses the SQuAD v1.1 evaluation script's normalisation and token
F1 (Rajpurkar et al., "SQuAD: 100,000+ Questions for Machine Comprehension of
Text", EMNLP 2016; `evaluate-v1.1.py`): lowercase, drop punctuation, drop the
articles a/an/the, collapse whitespace; F1 over the bag of tokens, the best over
the reference answers. A cited answer is a sentence, not a span, so its F1 is held
down by its own length; `contains` (a normalised reference occurs in the
normalised answer, on token boundaries) is the measure that does not punish that.
Citation markers ([3]) are removed before either is computed.

A metric that a question cannot have (precision of an empty set, the share of
verified quotes in an answer that quotes nothing) is None for that question and
left out of the mean, and the summary says over how many questions each mean runs.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ragtui.evaluation.metrics import bootstrap_ci, paired_bootstrap

# name -> what it measures (the report's legend, one line each)
ANSWER_METRICS: dict[str, str] = {
    "annotation_recall": "judged-relevant retrieved sources the annotator kept, over the relevant retrieved",
    "annotation_precision": "kept sources that are judged relevant, over the kept",
    "packed_recall": "judged-relevant retrieved sources that reached the answer's prompt, over the relevant "
                     "retrieved",
    "packed_precision": "sources in the answer's prompt that are judged relevant, over those in the prompt",
    "answer_f1": "SQuAD token F1 of the answer against the best reference answer",
    "answer_contains": "1 when a reference answer occurs in the answer (SQuAD normalisation)",
    "citation_precision": "cited numbers that point to a judged-relevant source, over the numbers cited",
    "citation_recall": "1 when the answer cites at least one judged-relevant source",
    "no_citation": "1 when the answer cites nothing",
    "quotes_verified": "quotes found in the source they cite, over the answer's quotes",
    "faithfulness": "answer statements the judge finds supported by the sources they cite, over the statements",
    "llm_calls": "chat calls (annotation and answer) for the question",
    "prompt_tokens": "prompt tokens of those calls",
    "output_tokens": "output tokens of those calls",
    "seconds": "wall seconds for the question (retrieve, annotate, answer)",
}

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalize_answer: lowercase, remove punctuation, remove articles, fix whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def strip_citations(answer: str) -> str:
    """The answer with its citation brackets ([3], [1, 2]) blanked out, as the citation parser finds them."""
    from ragtui.llm.citations import citation_spans

    parts, at = [], 0
    for span in citation_spans(answer):
        parts += [answer[at:span.start], " "]
        at = span.end
    return "".join([*parts, answer[at:]])


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD v1.1's f1_score: harmonic mean of token precision and recall over the normalised bags of tokens."""
    predicted, wanted = normalize_answer(prediction).split(), normalize_answer(reference).split()
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def contains_reference(answer: str, reference: str) -> bool:
    """Whether the normalised reference occurs in the normalised answer as whole tokens."""
    wanted = normalize_answer(reference)
    return bool(wanted) and f" {wanted} " in f" {normalize_answer(answer)} "


def answer_scores(answer: str, references: Sequence[str]) -> tuple[float, float]:
    """(best token F1, 1.0 if any reference is contained else 0.0), citation markers removed first."""
    text = strip_citations(answer)
    if not references:
        return 0.0, 0.0
    return (max(token_f1(text, r) for r in references),
            1.0 if any(contains_reference(text, r) for r in references) else 0.0)


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass
class AnsweredQuestion:
    """What one question's run produced, reduced to what the metrics need (source numbers, not texts)."""

    qid: str
    question: str
    references: list[str]
    answer: str = ""
    relevant: list[int] = field(default_factory=list)     # retrieved sources whose document is judged relevant
    retrieved: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)         # the sources synthesis took (annotation's verdict)
    packed: list[int] = field(default_factory=list)       # the sources in the answer's prompt (whole or a window)
    windowed: list[int] = field(default_factory=list)
    cited: list[int] = field(default_factory=list)
    claimless: bool = False                               # an echo of the prompt or a non-answer: scored uncited
    quotes: int = 0
    quotes_verified: int = 0
    statements: int = 0                                   # judged statements (with --judge)
    supported: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    tokens_reported: int = 0                              # calls whose tokens the server reported
    seconds: float = 0.0
    error: str = ""

    def scores(self, judged: bool = False) -> dict[str, float | None]:
        relevant = set(self.relevant)
        f1, contains = answer_scores(self.answer, self.references)
        cited = [] if self.claimless else self.cited      # its [N] claim nothing: precision 0, recall 0
        cited_relevant = sum(1 for n in cited if n in relevant)
        out: dict[str, float | None] = {
            "annotation_recall": _share(len(relevant & set(self.kept)), len(relevant)),
            "annotation_precision": _share(len(relevant & set(self.kept)), len(self.kept)),
            "packed_recall": _share(len(relevant & set(self.packed)), len(relevant)),
            "packed_precision": _share(len(relevant & set(self.packed)), len(self.packed)),
            "answer_f1": f1,
            "answer_contains": contains,
            "citation_precision": 0.0 if self.claimless else _share(cited_relevant, len(cited)),
            "citation_recall": 1.0 if cited_relevant else 0.0,
            "no_citation": 0.0 if cited else 1.0,
            "quotes_verified": _share(self.quotes_verified, self.quotes),
            "faithfulness": _share(self.supported, self.statements) if judged else None,
            "llm_calls": float(self.llm_calls),
            "prompt_tokens": float(self.prompt_tokens),
            "output_tokens": float(self.output_tokens),
            "seconds": self.seconds,
        }
        return out


def summarise_answers(per_question: Mapping[str, Mapping[str, float | None]],
                      resamples: int = 1000, seed: int = 42) -> dict[str, dict[str, float]]:
    """Metric -> mean, 95% bootstrap CI and n (the questions the metric is defined for); metrics that no
    question has (faithfulness without a judge) are left out."""
    out = {}
    for name in ANSWER_METRICS:
        values = [v for row in per_question.values() if (v := row.get(name)) is not None]
        if not values:
            continue
        lo, hi = bootstrap_ci(values, resamples, seed)
        out[name] = {"mean": sum(values) / len(values), "ci_low": lo, "ci_high": hi, "n": float(len(values))}
    return out


def compare_answers(a: Mapping[str, Mapping[str, float | None]], b: Mapping[str, Mapping[str, float | None]],
                    resamples: int = 1000, seed: int = 42) -> dict[str, dict[str, float]]:
    """Metric -> paired bootstrap of b - a over the questions both runs have the metric for (n says how many)."""
    if set(a) != set(b):
        raise ValueError(f"the two runs answered different questions ({len(a)} and {len(b)}; "
                         f"{len(set(a) ^ set(b))} differ)")
    out = {}
    for name in ANSWER_METRICS:
        pairs = [(x, y) for q in a if (x := a[q].get(name)) is not None and (y := b[q].get(name)) is not None]
        if pairs:
            diff = paired_bootstrap([x for x, _ in pairs], [y for _, y in pairs], resamples, seed)
            out[name] = {**diff, "n": float(len(pairs))}
    return out

