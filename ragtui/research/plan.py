"""What a research run asks the model, and what of its replies it uses: the plan (2-6 sub-questions) and, after
each round, the gap check (which sub-questions still lack evidence, with a new search for each).

Every reply is untrusted: it is cut at MAX_REPLY_CHARS before it is read, each line cleaned like a retrieval
strategy's query (`query_variants.clean_queries`: control characters, bullets and numbering gone, one line of
at most `rewrite.MAX_CHARS`, a line that repeats the question, refuses or shares no word with it dropped). A
plan reply with fewer than two usable sub-questions is junk: the run falls back to the question split by
`retrieve.fragments` (or the question alone), and says why; a line of more than MAX_PART_WORDS words or one
ending in a colon is an answer or a heading, not a sub-question (a small model may answer the question
instead of splitting it). A gap reply that names no sub-question and does
not say NONE is junk too: the sub-questions that kept no source are searched again, as they were worded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragtui.llm.fencing import fold_line
from ragtui.model.research_run import SubQuestion

MIN_PARTS = 2
MAX_PARTS = 6
MAX_PART_CHARS = 400          # a sub-question the user types or edits
MAX_REPLY_CHARS = 4_000
MAX_PART_WORDS = 25            # a sub-question is a question or a search, not a paragraph
QUOTES_SHOWN = 2               # quotes per sub-question the gap check is shown
QUOTE_CHARS = 200

PLAN_PROMPT = (
    "Split the user's question into {low} to {high} sub-questions, each one a single thing to look up in the "
    "user's documents, which together answer the whole question. Keep every name and technical term. Reply with "
    "the sub-questions only, one per line, without answering them."
)
GAP_PROMPT = (
    "You check a research plan. Each numbered sub-question below is shown with how many sources were kept for "
    "it and what they say. Name each sub-question that still lacks evidence, with a new search for it worded "
    "differently, one per line as `N: new search`. Reply NONE when every sub-question has enough evidence."
)
_GAP_LINE = re.compile(r"^\W*(\d{1,2})\s*[:.)\-]\s*(.+)$")
_NONE = re.compile(r"^\W*none\W*$", re.IGNORECASE)


def plan_messages(question: str) -> list[tuple[str, str]]:
    return [("system", PLAN_PROMPT.format(low=MIN_PARTS, high=MAX_PARTS)),
            ("user", f"Question: {question}\n\nSub-questions:")]


def parse_plan(reply: str, question: str) -> tuple[list[str], str]:
    """The usable sub-questions of the model's reply (at most MAX_PARTS), and why it is junk ("" when not)."""
    from ragtui.llm.query_variants import clean_queries

    parts, why = clean_queries(reply[:MAX_REPLY_CHARS], question, 4 * MAX_PARTS)
    if why:
        return [], why
    asked = [p for p in parts if len(p.split()) <= MAX_PART_WORDS and not p.endswith(":")][:MAX_PARTS]
    if parts and not asked:
        return [], "its lines read as answers or headings, not sub-questions"
    parts = asked
    if len(parts) < MIN_PARTS:
        return [], f"it held {len(parts)} usable sub-question, fewer than {MIN_PARTS}"
    return parts, ""


def fallback_plan(question: str) -> list[str]:
    """The rule-based plan: the question's fragments (`retrieve.fragments`), or the question alone."""
    from ragtui.retrieve.fragments import query_fragments

    return query_fragments(question) or [" ".join(question.split())]


def gap_messages(question: str, plan: Sequence[SubQuestion], quotes: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """The gap check's prompt: each sub-question with its kept sources' count and the first of their quotes."""
    lines = []
    for i, (sub, said) in enumerate(zip(plan, quotes, strict=True), start=1):
        shown = " | ".join(fold_line(q)[:QUOTE_CHARS] for q in said[:QUOTES_SHOWN])
        lines.append(f"{i}. {sub.text} ({sub.kept} source(s) kept{': ' + shown if shown else ''})")
    return [("system", GAP_PROMPT),
            ("user", f"Question: {question}\n\nSub-questions:\n" + "\n".join(lines) + "\n\nLacking evidence:")]


def parse_gaps(reply: str, plan: Sequence[SubQuestion]) -> tuple[list[tuple[int, str]], str]:
    """(0-based sub-question, new search) for each gap the reply names, at most one per sub-question, and why the
    reply is junk ("" when it is not). NONE: no gaps. A new search that cannot be used (empty, a refusal, no
    word in common with its sub-question) is the sub-question as worded."""
    from ragtui.llm.query_variants import clean_queries

    gaps: dict[int, str] = {}
    said_none = False
    for line in reply[:MAX_REPLY_CHARS].splitlines():
        if _NONE.match(line):
            said_none = True
            continue
        match = _GAP_LINE.match(line)
        if not match or not 1 <= int(match.group(1)) <= len(plan):
            continue
        index = int(match.group(1)) - 1
        worded = plan[index].text
        found, _ = clean_queries(match.group(2), worded, 1)
        gaps.setdefault(index, found[0] if found else worded)
    if gaps or said_none:
        return sorted(gaps.items()), ""
    return [(i, sub.text) for i, sub in enumerate(plan) if not sub.kept], \
        "it named no sub-question and did not say NONE"
