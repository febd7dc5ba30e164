"""Judge-based correctness: a model grades an answer against the reference answers as right, partly right, wrong
or abstained, with its reason; and how far that judge agrees with a labelled calibration set.

A judge is a model, not ground truth, so its scores come with its agreement on a
set whose right labels are known (`judge_calibration.jsonl`, built by
benchmarks/judge_calibration.py from QASPER): the share of rows where its verdict
is the label, and Cohen's kappa (Cohen, "A Coefficient of Agreement for Nominal
Scales", 1960), which discounts the agreement two raters reach by chance from
their label frequencies alone: kappa = (p_o - p_e) / (1 - p_e), 1 for perfect
agreement, 0 for chance. Both have a 95% bootstrap CI over the rows. A reply
whose first word is none of the four labels counts as no verdict (a disagreement).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragtui.llm.chat import ChatModel, LLMError, refitted
from ragtui.llm.fencing import FENCE_RULE, fence
from ragtui.llm.packing import MESSAGE_TOKENS
from ragtui.llm.providers import GRADER_MAX_TOKENS
from ragtui.sanitize import one_line
from ragtui.tokens import CHARS_PER_TOKEN, estimate_tokens

VERDICTS = ("right", "partly", "wrong", "abstained")
VERDICT_SCORES = {"right": 1.0, "partly": 0.5, "wrong": 0.0, "abstained": 0.0}
GRADE_PROMPT = (
    "You grade an answer to a question against reference answers written by people who read the source. Reply "
    "with one word, then one short sentence of reason. RIGHT: the answer gives what a reference gives (other "
    "words, more detail or a longer text are fine). PARTLY: it gives part of it, or it with a mistake. WRONG: it "
    "gives something else, or nothing that answers. ABSTAINED: it says the sources do not answer the question. "
    + FENCE_RULE)
CALIBRATION = Path(__file__).with_name("judge_calibration.jsonl")
REASON_CHARS = 300
_LABEL = re.compile(r"[a-z]+")


def grade_messages(question: str, references: Sequence[str], answer: str) -> list[tuple[str, str]]:
    shown = "\n".join(fence(r.strip()) for r in references)
    return [("system", GRADE_PROMPT),
            ("user", f"QUESTION: {one_line(question)}\n\nREFERENCE ANSWERS:\n{shown}\n\nANSWER:\n"
                     f"{fence(answer.strip())}\n\nRIGHT, PARTLY, WRONG or ABSTAINED, and why?")]


def parse_verdict(reply: str) -> tuple[str, str]:
    """(label, reason) from the judge's reply: its first word as one of VERDICTS ("" when it is none), the rest
    as one line of at most REASON_CHARS characters."""
    text = one_line(reply).strip().lstrip("*\"'`#- ")
    match = _LABEL.match(text.lower())
    word = match.group() if match else ""
    label = {"partially": "partly", "partial": "partly", "correct": "right", "incorrect": "wrong"}.get(word, word)
    if label not in VERDICTS:
        return "", text[:REASON_CHARS]
    return label, text[match.end():].strip(" *:.,-—\"'")[:REASON_CHARS] if match else ""


class Grader:
    """The judge model asked for verdicts, and what its calls came to: failed calls, replies with no label, cut
    answers."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model
        self.failed = 0
        self.unparsed = 0
        self.cut = 0

    def _fit(self, question: str, references: Sequence[str], answer: str) -> list[tuple[str, str]]:
        frame = estimate_tokens("".join(t for _, t in grade_messages(question, references, "")))
        room = int((self.model.context_window - GRADER_MAX_TOKENS - frame - 2 * MESSAGE_TOKENS) * CHARS_PER_TOKEN)
        if len(answer) > room:
            self.cut += 1
            answer = answer[:max(room, 0)].rstrip() + " …"
        return grade_messages(question, references, answer)

    async def verdict(self, question: str, references: Sequence[str], answer: str) -> tuple[str, str]:
        """(label, reason); a failed call is ("", the error) and counts in `failed`."""
        messages = self._fit(question, references, answer)
        self.model = await refitted(self.model, messages, GRADER_MAX_TOKENS)
        try:
            reply, _ = await self.model.complete(messages)
        except LLMError as exc:
            self.failed += 1
            return "", f"the judge call failed: {one_line(str(exc))[:REASON_CHARS]}"
        label, reason = parse_verdict(reply)
        self.unparsed += not label
        return label, reason

    def notices(self) -> list[str]:
        found = []
        if self.failed:
            found.append(f"{self.failed} correctness judge call(s) failed; those answers count as wrong")
        if self.unparsed:
            found.append(f"{self.unparsed} correctness verdict(s) began with none of RIGHT, PARTLY, WRONG, ABSTAINED; "
                         "those answers count as wrong")
        if self.cut:
            found.append(f"{self.cut} answer(s) were cut to fit the judge's window before grading")
        return found

    async def aclose(self) -> None:
        await self.model.aclose()


def load_calibration(path: Path = CALIBRATION) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.get("label") in VERDICTS]


def cohen_kappa(labels: Sequence[str], verdicts: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters over the same rows; None when chance agreement is already total (one label
    used by both for every row)."""
    n = len(labels)
    if not n:
        return None
    observed = sum(a == b for a, b in zip(labels, verdicts, strict=True)) / n
    first, second = Counter(labels), Counter(verdicts)
    expected = sum(first[k] * second[k] for k in first) / (n * n)
    return None if expected >= 1 else (observed - expected) / (1 - expected)


def agreement_report(labels: Sequence[str], verdicts: Sequence[str], resamples: int = 1000,
                     seed: int = 42) -> dict[str, Any]:
    """Agreement and kappa with 95% bootstrap CIs over the rows, and the confusion counts (label -> verdict)."""
    import numpy as np

    n = len(labels)
    same = [float(a == b) for a, b in zip(labels, verdicts, strict=True)]
    rng = np.random.default_rng(seed)
    agreements, kappas = [], []
    for _ in range(resamples):
        pick = rng.integers(0, n, n)
        agreements.append(float(np.mean([same[i] for i in pick])))
        kappa = cohen_kappa([labels[i] for i in pick], [verdicts[i] for i in pick])
        if kappa is not None:
            kappas.append(kappa)
    confusion: dict[str, dict[str, int]] = {}
    for label, verdict in zip(labels, verdicts, strict=True):
        row = confusion.setdefault(label, {})
        row[verdict or "none"] = row.get(verdict or "none", 0) + 1
    kappa = cohen_kappa(labels, verdicts)
    return {"rows": n, "agreement": {"mean": sum(same) / n if n else 0.0,
                                     **_interval(agreements)},
            "kappa": {"mean": kappa, **(_interval(kappas) if kappas else {"ci_low": None, "ci_high": None})},
            "confusion": confusion}


def _interval(values: Sequence[float]) -> dict[str, float]:
    import numpy as np

    lo, hi = np.percentile(values, [2.5, 97.5]) if values else (0.0, 0.0)
    return {"ci_low": float(lo), "ci_high": float(hi)}


async def calibrate(grader: Grader, rows: Sequence[dict[str, str]]) -> dict[str, Any]:
    """The grader's verdicts on the calibration rows, against their labels."""
    verdicts = [(await grader.verdict(r["question"], [r["reference"]], r["answer"]))[0] for r in rows]
    return {"set": CALIBRATION.name, **agreement_report([r["label"] for r in rows], verdicts)}
