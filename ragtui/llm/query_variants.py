"""What a retrieval strategy asks the model for, and what of its reply may be searched: alternative
queries (multi-query) and hypothetical answer passages (HyDE).

Every reply is untrusted text: control characters and escape sequences go, labels, bullets and numbering
are stripped, each query is one line of at most rewrite.MAX_CHARS, a passage at most MAX_PASSAGE_CHARS. A
small model may refuse, answer instead of rephrasing, echo the question or wander off the subject, so each
cleaner drops what cannot stand for the question and says why when nothing is left (the caller then
searches the question as typed).
"""

from __future__ import annotations

import re
import unicodedata

from ragtui.llm.rewrite import clean_rewrite, declines, unusable
from ragtui.text import content_words

MULTI_QUERY_PROMPT = (
    "Write {n} search queries that would find documents answering the user's question, each worded "
    "differently from the question and from each other (other words, synonyms, a more specific or more general "
    "phrasing). Keep every name and technical term. Reply with the queries only, one per line, without "
    "numbering and without answering the question."
)
# Several framings of the same request (multi-HyDE): passages written from different angles average out
# one framing's bias.
HYDE_PROMPTS = (
    "Write a short passage (three or four sentences) that answers the question, as it would appear in a "
    "reference document. Reply with the passage only.",
    "Write one paragraph of a scientific or technical paper that answers the question. Reply with the "
    "paragraph only.",
    "Write a short encyclopedia entry that answers the question. Reply with the entry only.",
)
MAX_PASSAGE_CHARS = 1500
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|.)")   # CSI, OSC, others
_BULLET = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.)]|query\s*\d*\s*:)\s*", re.IGNORECASE)


def multi_query_messages(question: str, n: int) -> list[tuple[str, str]]:
    return [("system", MULTI_QUERY_PROMPT.format(n=n)), ("user", f"Question: {question}\n\nQueries:")]


def hyde_messages(question: str, prompt: int) -> list[tuple[str, str]]:
    return [("system", HYDE_PROMPTS[prompt]), ("user", f"Question: {question}\n\nPassage:")]


def clean_queries(reply: str, question: str, most: int) -> tuple[list[str], str]:
    """At most `most` usable alternative queries from the reply, and why there are none ("" when some).

    A line is dropped when it repeats the question (or an earlier line), refuses, or shares no content word
    with the question; a trailing full stop is dropped first (a query may be a noun phrase)."""
    queries: list[str] = []
    reasons: list[str] = []
    folded = {" ".join(question.lower().split()).rstrip("?.!")}
    for line in _ESCAPE.sub("", reply).splitlines():
        text = clean_rewrite(_BULLET.sub("", line)).rstrip(".!").strip()
        key = text.lower().rstrip("?")
        if not text or key in folded:
            continue
        why = unusable(text, question, [])
        if why:
            reasons.append(why.replace("the conversation", "the question"))   # here the question is all of it
            continue
        folded.add(key)
        queries.append(text)
        if len(queries) == most:
            break
    if queries:
        return queries, ""
    return [], reasons[0] if reasons else "it held no query other than the question"


def clean_passage(reply: str, question: str) -> tuple[str, str]:
    """The reply as one passage (control characters gone, whitespace folded, at most MAX_PASSAGE_CHARS), and
    why it cannot be used ("" when it can): empty, opening with a refusal, or not about the question (no
    content word in common)."""
    text = "".join(ch for ch in _ESCAPE.sub("", reply) if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    text = " ".join(text.split())[:MAX_PASSAGE_CHARS]
    if not text:
        return "", "it was empty"
    if declines(re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]):     # its opening sentence: a passage may say
        return "", "it reads as a refusal"                               # "does not provide" about its subject
    if not content_words([text]) & content_words([question]):
        return "", "it shares no word with the question"
    return text, ""

