"""LLM-judge faithfulness: the share of an answer's statements that the sources they cite support.

The answer is split into sentences (statements); each is sent to the judge with the
texts of the sources it cites, and counts as supported when the judge's reply
begins with "yes". A statement that cites nothing counts as unsupported without a
call (the faithfulness of RAGAS, Es et al. 2023, checked per citation instead of
against the whole context). A judge is a model, not ground truth: the report names it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ragtui.llm.chat import ChatModel, LLMError
from ragtui.llm.fencing import FENCE_RULE, fence

JUDGE_PROMPT = ("You check a statement against sources. Reply with one word: YES if the sources state or "
                "directly imply the statement, NO otherwise. " + FENCE_RULE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
MIN_WORDS = 3            # a shorter fragment ("See [2].") is not a statement


def statements(answer: str) -> list[str]:
    """The answer's sentences of at least MIN_WORDS words (citations included, so each keeps its sources)."""
    return [s.strip() for s in _SENTENCE_END.split(answer.strip()) if len(s.split()) >= MIN_WORDS]


async def judge_answer(judge: ChatModel, answer: str, texts: Mapping[int, str]) -> tuple[int, int, int]:
    """(statements, supported, failed judge calls) for one answer; `texts` maps source numbers to their texts.

    A statement whose judge call failed counts as unsupported (the caller says how many did)."""
    from ragtui.evaluation.answer_metrics import strip_citations
    from ragtui.llm.citations import cited_numbers

    found = statements(answer)
    supported = failed = 0
    for statement in found:
        cited = [n for n in cited_numbers(statement) if n in texts]
        if not cited:
            continue
        claim = " ".join(strip_citations(statement).split())
        sources = "\n\n".join(f"[{n}]\n{fence(texts[n].strip())}" for n in cited)
        messages = [("system", JUDGE_PROMPT),
                    ("user", f"SOURCES:\n\n{sources}\n\nSTATEMENT: {claim}\n\n"
                             "Is the statement supported by the sources? YES or NO.")]
        try:
            reply, _ = await judge.complete(messages)
        except LLMError:
            failed += 1
            continue
        supported += reply.strip().lstrip("*\"'").lower().startswith("yes")
    return len(found), supported, failed
