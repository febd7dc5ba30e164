"""Scores of one answered question: annotation as a relevance filter, answer correctness, citations, cost.

Answer correctness uses the SQuAD v1.1 evaluation script's normalisation and token
F1 (Rajpurkar et al., "SQuAD: 100,000+ Questions for Machine Comprehension of
Text", EMNLP 2016; `evaluate-v1.1.py`): lowercase, drop punctuation, drop the
articles a/an/the, collapse whitespace; F1 over the bag of tokens, the best over
the reference answers. A cited answer is a sentence, not a span, so its F1 is held
down by its own length; `contains` (a normalised reference occurs in the
normalised answer, on token boundaries) is the measure that does not punish that.
Citation markers ([3]) are removed before any of them is computed.

A long-form reference (a few sentences) is a different case: token F1 is then held
down by whichever text is longer, right and wrong answers alike. Two measures fit it:
reference-token recall (the share of the reference's tokens, SQuAD-normalised, that
the answer holds) and ROUGE-L (the F-measure of the longest common subsequence of
tokens, Lin, "ROUGE: A Package for Automatic Evaluation of Summaries", 2004), computed
by Google's `rouge-score` package with its Porter stemmer. A judge model's verdict
(`grading.py`) is the fourth. Every text metric is printed beside its floor and its
ceiling (`bounds.py`), so a score is read against what nonsense and a perfect answer
score on the same questions.

A question the corpus does not answer (`metadata.answers` empty) has no answer
metrics; it counts in `abstention`: whether the product abstained on it, by keeping
no source or by answering that the sources do not say (`says_sources_do_not_answer`).
`false_abstention` is the same on the answerable questions.

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
from typing import Any

from ragtui.evaluation.metrics import bootstrap_ci, paired_bootstrap

# name -> what it measures (the report's legend, one line each)
ANSWER_METRICS: dict[str, str] = {
    "annotation_recall": "judged-relevant retrieved sources kept by the annotator, over the relevant retrieved",
    "annotation_precision": "sources kept by the annotator that are judged relevant, over the kept; only for "
                            "questions where the annotator filtered something (else it is packed_precision)",
    "packed_recall": "judged-relevant retrieved sources that reached the answer's prompt, over the relevant "
                     "retrieved",
    "packed_precision": "sources in the answer's prompt that are judged relevant, over those in the prompt",
    "answer_f1": "SQuAD token F1 of the answer against the best reference answer",
    "answer_contains": "1 when a reference answer occurs in the answer (SQuAD normalisation)",
    "answer_recall": "share of the best reference's tokens that the answer holds (SQuAD normalisation)",
    "rouge_l": "ROUGE-L F-measure against the best reference (rouge-score, Porter stemmer)",
    "correctness": "the judge's verdict against the references: right 1, partly right 0.5, wrong or abstained 0",
    "abstention": "unanswerable questions on which the product abstained (kept no source, or said the sources "
                  "do not answer)",
    "false_abstention": "answerable questions on which the product abstained",
    "citation_precision": "cited numbers that point to a judged-relevant source, over the numbers cited",
    "citation_recall": "1 when the answer cites at least one judged-relevant source",
    "no_citation": "1 when the answer cites nothing",
    "quotes_verified": "quotes found in the source they cite, over the answer's quotes",
    "quotes_misattributed": "quotes not in the source they cite but in another source of the answer, over the "
                            "answer's quotes",
    "numbers_unsupported": "1 when a sentence of the answer states a number that none of the sources it cites holds",
    "echo": "1 when the answer copies its prompt or says nothing its sources say (scored as uncited)",
    "faithfulness": "answer statements the judge finds supported by the sources they cite, over the statements",
    "llm_calls": "chat calls (annotation and answer) for the question",
    "prompt_tokens": "prompt tokens of those calls",
    "output_tokens": "output tokens of those calls",
    "tokens": "prompt and output tokens of those calls",
    "seconds": "wall seconds for the question (retrieve, annotate, answer)",
}

# The metrics that count (calls, tokens, seconds) rather than rate in [0, 1].
COUNT_METRICS = ("llm_calls", "prompt_tokens", "output_tokens", "tokens", "seconds")

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


def reference_recall(prediction: str, reference: str) -> float:
    """The share of the reference's normalised tokens (as a bag) that the prediction holds."""
    predicted, wanted = Counter(normalize_answer(prediction).split()), Counter(normalize_answer(reference).split())
    total = sum(wanted.values())
    return sum((predicted & wanted).values()) / total if total else 0.0


TEXT_METRICS = ("answer_f1", "answer_contains", "answer_recall", "rouge_l")


def text_scores(answer: str, references: Sequence[str]) -> dict[str, float]:
    """TEXT_METRICS of an answer, each the best over the references, citation markers removed first."""
    from rouge_score import rouge_scorer

    if not references:
        return dict.fromkeys(TEXT_METRICS, 0.0)
    text = strip_citations(answer)
    f1, contains = answer_scores(text, references)
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return {"answer_f1": f1, "answer_contains": contains,
            "answer_recall": max(reference_recall(text, r) for r in references),
            "rouge_l": max(scorer.score(r, text)["rougeL"].fmeasure for r in references)}


# An answer that says the sources do not answer: the words the synthesis prompt asks for ("If the sources do not
# answer the question, say so plainly") and their usual variants.
_ABSTAINS = re.compile(
    r"\b(?:(?:do|does|did)(?:\s+not|n[’']t)\s+(?:answer|say|state|mention|specify|provide|contain|give|address|"
    r"cover|include)|(?:no|not\s+enough|insufficient)\s+(?:relevant\s+)?(?:information|evidence|answer|mention)|"
    r"(?:cannot|can\s*not|can[’']t|unable\s+to)\s+(?:be\s+)?(?:answer|determine|find|tell|say|found|answered|"
    r"determined)|(?:is|are)\s+not\s+(?:mentioned|stated|specified|given|provided|discussed|described|"
    r"answered)|unanswerable)\b", re.IGNORECASE)
ABSTAIN_WINDOW = 300        # the words that say so come first: a long answer that mentions it later still answers


def says_sources_do_not_answer(answer: str) -> bool:
    """Whether the answer opens (its first ABSTAIN_WINDOW characters) by saying the sources do not answer."""
    return bool(_ABSTAINS.search(strip_citations(answer)[:ABSTAIN_WINDOW]))


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass
class AnsweredQuestion:
    """What one question's run produced, reduced to what the metrics need (source numbers, not texts)."""

    qid: str
    question: str
    references: list[str]                                 # empty: a question the corpus does not answer
    answer: str = ""
    relevant: list[int] = field(default_factory=list)     # retrieved sources whose document is judged relevant
    retrieved: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)         # the sources synthesis took (annotation's verdict)
    filtered: list[int] = field(default_factory=list)     # the sources the annotator judged irrelevant
    packed: list[int] = field(default_factory=list)       # the sources in the answer's prompt (whole or a window)
    windowed: list[int] = field(default_factory=list)
    cited: list[int] = field(default_factory=list)
    claimless: bool = False                               # an echo of the prompt or a non-answer: scored uncited
    quotes: int = 0
    quotes_verified: int = 0
    quotes_misattributed: int = 0
    numbers_unsupported: int = 0                          # stated numbers its cited sources do not hold
    statements: int = 0                                   # judged statements (with --judge)
    supported: int = 0
    verdict: str = ""                                     # the judge's correctness label (with --judge)
    reason: str = ""                                      # and the reason it gave
    llm_calls: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    tokens_reported: int = 0                              # calls whose tokens the server reported
    seconds: float = 0.0
    error: str = ""

    @property
    def answerable(self) -> bool:
        return bool(self.references)

    @property
    def abstained(self) -> bool:
        """No source kept for the answer (nothing retrieved, or the annotator filtered all), or an answer that says
        the sources do not answer; a question whose run failed otherwise did not abstain."""
        return (not self.kept and not self.error.startswith("retrieve")) or says_sources_do_not_answer(self.answer)

    def scores(self, judged: bool = False) -> dict[str, float | None]:
        from ragtui.evaluation.grading import VERDICT_SCORES

        relevant = set(self.relevant)
        answerable = self.answerable
        texts: Mapping[str, float | None] = (text_scores(self.answer, self.references) if answerable
                                             else dict.fromkeys(TEXT_METRICS))
        cited = [] if self.claimless else self.cited      # its [N] claim nothing: precision 0, recall 0
        cited_relevant = sum(1 for n in cited if n in relevant)
        out: dict[str, float | None] = {
            "annotation_recall": _share(len(relevant & set(self.kept)), len(relevant)),
            "annotation_precision": (_share(len(relevant & set(self.kept)), len(self.kept)) if self.filtered
                                     else None),
            "packed_recall": _share(len(relevant & set(self.packed)), len(relevant)),
            "packed_precision": _share(len(relevant & set(self.packed)), len(self.packed)) if answerable else None,
            **texts,
            "correctness": VERDICT_SCORES.get(self.verdict, 0.0) if judged and answerable else None,
            "abstention": None if answerable else float(self.abstained),
            "false_abstention": float(self.abstained) if answerable else None,
            "citation_precision": ((0.0 if self.claimless else _share(cited_relevant, len(cited))) if answerable
                                   else None),
            "citation_recall": (1.0 if cited_relevant else 0.0) if answerable else None,
            "no_citation": 0.0 if cited else 1.0,
            "quotes_verified": _share(self.quotes_verified, self.quotes),
            "quotes_misattributed": _share(self.quotes_misattributed, self.quotes),
            "numbers_unsupported": 1.0 if self.numbers_unsupported else 0.0,
            "echo": float(self.claimless),
            "faithfulness": _share(self.supported, self.statements) if judged else None,
            "llm_calls": float(self.llm_calls),
            "prompt_tokens": float(self.prompt_tokens),
            "output_tokens": float(self.output_tokens),
            "tokens": float(self.prompt_tokens + self.output_tokens),
            "seconds": self.seconds,
        }
        return out


def summarise_answers(per_question: Mapping[str, Mapping[str, float | None]],
                      bounds: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None,
                      resamples: int = 1000, seed: int = 42) -> dict[str, dict[str, Any]]:
    """Metric -> mean, 95% bootstrap CI, n (the questions the metric is defined for), its floor and its ceiling
    (`bounds`: metric -> "floor" / "passage" / "second_reference" -> question -> value; each summarised the same
    way, None where the metric has none); metrics that no question has (faithfulness without a judge) are left
    out."""
    bounds = bounds or {}
    out: dict[str, dict[str, Any]] = {}
    for name in ANSWER_METRICS:
        values = [v for row in per_question.values() if (v := row.get(name)) is not None]
        if not values:
            continue
        own = bounds.get(name, {})
        ceilings = {kind: _mean_ci(list(own[kind].values()), resamples, seed)
                    for kind in ("passage", "second_reference") if own.get(kind)}
        out[name] = {**_mean_ci(values, resamples, seed),
                     "floor": _mean_ci(list(own["floor"].values()), resamples, seed) if own.get("floor") else None,
                     "ceiling": ceilings or None}
    return out


def _mean_ci(values: Sequence[float], resamples: int, seed: int) -> dict[str, float]:
    lo, hi = bootstrap_ci(values, resamples, seed)
    return {"mean": sum(values) / len(values), "ci_low": lo, "ci_high": hi, "n": float(len(values))}


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

