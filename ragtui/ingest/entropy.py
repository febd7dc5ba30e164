"""Chunk quality as pure functions: Shannon entropy, word count, the TOC heuristic, the drop verdict.

Junk never reaches the LLM (spec 1): binary garbage that escaped format detection,
near-empty chunks, and tables of contents whose lines are mostly page numbers. The LlamaIndex
component that applies them is `transforms.EntropyFilter`.
"""

from __future__ import annotations

import math
import re
from collections import Counter

WORD = re.compile(r"\w+")
_PAGE_REF = re.compile(r"^\s*(?:\d{1,5}|[ivxlcdm]{1,7})\s*$|(?:\.{2,}|…|\s{2,}|\t)\s*(?:\d{1,5}|[ivxlcdm]{1,7})\s*$",
                       re.IGNORECASE)

GARBAGE = "binary garbage"
SPARSE = "sparse/empty"
TOC = "table of contents"


def shannon_entropy(text: str) -> float:
    """H = -sum p(c) log2 p(c) over the characters of `text`, in bits per character (RAGWeed 2c)."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(k / n * math.log2(k / n) for k in Counter(text).values()) + 0.0


def word_count(text: str) -> int:
    return len(WORD.findall(text))


def toc_ratio(text: str) -> float:
    """Share of non-empty lines that are a bare page number or end in a dotted/spaced page number (nadir)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return 0.0
    return sum(bool(_PAGE_REF.search(ln)) for ln in lines) / len(lines)


def junk_reason(entropy: float, words: int, text: str, entropy_min: float, entropy_max: float,
                toc_threshold: float) -> str | None:
    """Why a chunk is dropped, or None to keep it (RAGWeed 2c; TOC heuristic from nadir, 3+ lines)."""
    if entropy > entropy_max:
        return GARBAGE
    if entropy < entropy_min and words < 5:
        return SPARSE
    if toc_threshold > 0 and text.count("\n") >= 2 and toc_ratio(text) >= toc_threshold:
        return TOC
    return None
