"""LLM-judge faithfulness: the share of an answer's statements that the sources they cite support.

The answer is split into sentences (statements); each is sent to the judge with the
texts of the sources it cites, and counts as supported when the judge's reply
begins with "yes". A statement that cites nothing counts as unsupported without a
call (the faithfulness of RAGAS, Es et al. 2023, checked per citation instead of
against the whole context). A judge is a model, not ground truth: the report names it.

Each prompt is fitted to the judge's window: the sources (and a statement longer than
half the room) are cut, the shortest kept whole first, and the run counts the prompts
it cut, since a judge that never saw the supporting passage says NO.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ragtui.llm.chat import ChatModel, LLMError, refitted
from ragtui.llm.fencing import FENCE_RULE, fence
from ragtui.llm.packing import MESSAGE_TOKENS
from ragtui.llm.providers import JUDGE_MAX_TOKENS
from ragtui.tokens import CHARS_PER_TOKEN, estimate_tokens

JUDGE_PROMPT = ("You check a statement against sources. Reply with one word: YES if the sources state or "
                "directly imply the statement, NO otherwise. " + FENCE_RULE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
MIN_WORDS = 3            # a shorter fragment ("See [2].") is not a statement
CUT_MARK = " …"


def statements(answer: str) -> list[str]:
    """The answer's sentences of at least MIN_WORDS words (citations included, so each keeps its sources)."""
    return [s.strip() for s in _SENTENCE_END.split(answer.strip()) if len(s.split()) >= MIN_WORDS]


def judge_messages(claim: str, sources: Sequence[tuple[int, str]]) -> list[tuple[str, str]]:
    """The judge's prompt: the cited sources, fenced, then the statement."""
    shown = "\n\n".join(f"[{n}]\n{fence(text.strip())}" for n, text in sources)
    return [("system", JUDGE_PROMPT),
            ("user", f"SOURCES:\n\n{shown}\n\nSTATEMENT: {claim}\n\nIs the statement supported by the sources? "
                     "YES or NO.")]


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:max(chars - len(CUT_MARK), 0)].rstrip() + CUT_MARK


def shares(lengths: Sequence[int], room: int) -> list[int]:
    """Characters each text may keep so that all of them take at most `room`: the shortest are kept whole
    first, the rest share what is left equally."""
    allowed = [0] * len(lengths)
    left = max(room, 0)
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for k, i in enumerate(order):
        allowed[i] = min(lengths[i], left // (len(order) - k))
        left -= allowed[i]
    return allowed


def fit_prompt(claim: str, sources: Sequence[tuple[int, str]], window: int) -> tuple[list[tuple[str, str]], bool]:
    """The judge's prompt within `window` tokens less JUDGE_MAX_TOKENS of reply (estimated as packing does),
    and whether anything was cut to get there."""
    frame = estimate_tokens("".join(t for _, t in judge_messages("", [(n, "") for n, _ in sources])))
    room = int((window - JUDGE_MAX_TOKENS - frame - 2 * MESSAGE_TOKENS) * CHARS_PER_TOKEN)
    fitted_claim = _cut(claim, max(room // 2, room - sum(len(t) for _, t in sources)))
    allowed = shares([len(t) for _, t in sources], room - len(fitted_claim))
    fitted = [(n, _cut(t, a)) for (n, t), a in zip(sources, allowed, strict=True)]
    cut = fitted_claim != claim or any(f != t for (_, f), (_, t) in zip(fitted, sources, strict=True))
    return judge_messages(fitted_claim, fitted), cut


class Judge:
    """The judge model, and what its calls came to: those that failed and the prompts cut to fit its window."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model
        self.failed = 0
        self.cut = 0

    async def supports(self, claim: str, sources: Sequence[tuple[int, str]]) -> bool:
        """Whether the judge replies YES; a failed call counts as NO (and in `failed`)."""
        messages, cut = fit_prompt(claim, sources, self.model.context_window)
        self.cut += cut
        self.model = await refitted(self.model, messages, JUDGE_MAX_TOKENS)
        try:
            reply, _ = await self.model.complete(messages)
        except LLMError:
            self.failed += 1
            return False
        return reply.strip().lstrip("*\"'").lower().startswith("yes")

    def notices(self) -> list[str]:
        found = []
        if self.failed:
            found.append(f"{self.failed} judge call(s) failed; their statements count as unsupported")
        if self.cut:
            found.append(f"{self.cut} judge prompt(s) were cut to fit {self.model.model}'s "
                         f"{self.model.context_window:,}-token window (sources shortened; the judge may have "
                         "missed what supports them)")
        return found

    async def aclose(self) -> None:
        await self.model.aclose()


async def judge_answer(judge: Judge, answer: str, texts: Mapping[int, str]) -> tuple[int, int]:
    """(statements, supported) for one answer; `texts` maps source numbers to their texts."""
    from ragtui.evaluation.answer_metrics import strip_citations
    from ragtui.llm.citations import cited_numbers

    found = statements(answer)
    supported = 0
    for statement in found:
        cited = [n for n in cited_numbers(statement) if n in texts]
        if cited:
            claim = " ".join(strip_citations(statement).split())
            supported += await judge.supports(claim, [(n, texts[n]) for n in cited])
    return len(found), supported
