"""The standalone rewrite of a follow-up question (a conversation turn's second retrieval query).

"And how long does that take?" retrieves nothing useful on its own; the LLM
rewrites it from the conversation into a question that names what "that" is. The
reply is untrusted text: only its first line is kept, without quotes, labels or
control characters, at most MAX_CHARS long; an empty result means "no rewrite".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

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
