"""The standalone rewrite of a follow-up question (a conversation turn's second retrieval query).

"And how long does that take?" retrieves nothing useful on its own; the LLM
rewrites it from the conversation into a question that names what "that" is. The
reply is untrusted text: only its first line is kept, without quotes, labels or
control characters, at most MAX_CHARS long; an empty result means "no rewrite". A small model
may answer, refuse or wander instead of rewriting, so `unusable` says why a rewrite must not be used.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ragtui.text import content_words, search_words

REWRITE_PROMPT = (
    "Rewrite the user's last question as one standalone question that can be understood without the "
    "conversation: replace pronouns and vague references with what they refer to, keep every name and term. "
    "Reply with the rewritten question only, on one line, without answering it."
)
MAX_CHARS = 400
_LABEL = re.compile(r"^(?:standalone question|rewritten question|question|rewrite)\s*:\s*", re.IGNORECASE)
_QUOTES = " \t\"'`“”‘’«»*"
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|.)")   # CSI, OSC, others


def rewrite_messages(conversation: Sequence[tuple[str, str]], question: str) -> list[tuple[str, str]]:
    """The earlier turns as user/assistant messages, then the request to rewrite `question`."""
    messages: list[tuple[str, str]] = [("system", REWRITE_PROMPT)]
    for asked, answered in conversation:
        messages += [("user", asked), ("assistant", answered)]
    messages.append(("user", f"Last question: {question}\n\nStandalone question:"))
    return messages


def clean_rewrite(reply: str) -> str:
    """The model's rewrite as one safe line ("" when there is none)."""
    line = next((ln for ln in _ESCAPE.sub("", reply).splitlines() if ln.strip()), "")
    line = "".join(ch for ch in line if unicodedata.category(ch)[0] != "C")
    line = _LABEL.sub("", line.strip(_QUOTES)).strip(_QUOTES)
    return " ".join(line.split())[:MAX_CHARS]


# A reply that declines instead of rewriting: "The sources do not answer this question.", "I'm sorry, ..."
_REFUSAL = re.compile(
    r"\b(?:can ?not|can't|unable to|do(?:es)? not|don't|doesn't|no)\s+(?:answer|know|provide|say|mention|"
    r"contain|information|sources?|context)\b|\bI(?:'m| am) (?:sorry|afraid)\b|\bas an AI\b|"
    r"\bnot (?:enough|sufficient) (?:information|context)\b", re.IGNORECASE)
# Words a question or a request starts with, beside the question words ("how", "what", "is", "can", ...).
_REQUESTS = frozenset({"explain", "describe", "list", "compare", "show", "tell", "give", "find", "summarize",
                       "summarise", "define", "name", "outline", "please"})
_QUESTION_STARTS = frozenset({"how", "what", "when", "where", "which", "who", "whom", "whose", "why", "do", "does",
                              "did", "can", "could", "should", "would", "will", "shall", "may", "might", "must",
                              "is", "are", "was", "were", "has", "have", "had", "am"}) | _REQUESTS


def declines(text: str) -> bool:
    """The text reads as a refusal ("I'm sorry", "the sources do not say", "as an AI")."""
    return bool(_REFUSAL.search(text))


def unusable(rewrite: str, question: str, conversation: Sequence[tuple[str, str]]) -> str:
    """Why `rewrite` must not stand for `question` ("" when it may): a refusal, a statement rather than a
    question or a query, or no content word shared with the question and the earlier turns (their questions
    and answers)."""
    text = rewrite.strip()
    if declines(text) and not text.endswith("?"):
        return "it reads as a refusal, not a question"
    words = search_words(text.lower())
    if text.endswith((".", "!")) and (not words or words[0] not in _QUESTION_STARTS):
        return "it is a statement, not a question"
    earlier = content_words([question, *(part for turn in conversation for part in turn)])
    if not content_words([text]) & earlier:
        return "it shares no word with the conversation"
    return ""
