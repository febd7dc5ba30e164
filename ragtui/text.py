"""Text rules shared by ingest and search: compatibility normalisation and CJK runs.

One home for both, because the chunker, the keyword analyzer (index time) and the
query planner (query time) must agree exactly: "ﬁle" extracted from a PDF has to
meet "file" typed in a query, and a Chinese phrase has to be cut into the same
bigrams on both sides. Pure functions over str, no heavy imports.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from ragtui.words import FUNCTION_WORDS

# Compatibility decompositions that would change meaning if folded: x² is not x2, ½ is not 1/2,
# ① is not 1. Every other compatibility form (ligatures, full-width, Arabic presentation forms,
# no-break spaces, ...) is folded by NFKC.
_UNSAFE_TAGS = ("<super>", "<sub>", "<fraction>", "<circle>", "<square>")
_WIDTH_TAGS = ("<wide>", "<narrow>")

# Han ideographs (with extension A and compatibility ideographs), kana, Hangul syllables: scripts
# written without spaces between words (Hangul often has them, but its syllable runs are long).
CJK_CLASS = ("\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f")
CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    decomposition = unicodedata.decomposition(char)
    if not decomposition.startswith("<") or decomposition.startswith(_UNSAFE_TAGS):
        return char
    if decomposition.startswith(_WIDTH_TAGS) and not char.isalnum():
        return char             # CJK text's own full-width punctuation stays as written
    return unicodedata.normalize("NFKC", char)


def normalize(text: str) -> str:
    """NFC, with compatibility characters folded where safe (ligature "ﬁ" -> "fi", "Ａ" -> "A"; not "x²",
    "½", "①", nor full-width punctuation such as "，")."""
    if text.isascii():
        return text
    table = {ord(c): f for c in set(text) if (f := _fold(c)) != c}
    return unicodedata.normalize("NFC", text.translate(table) if table else text)


def is_cjk(char: str) -> bool:
    return CJK_RUN.fullmatch(char) is not None


def bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a one-character run is itself."""
    return [run] if len(run) < 2 else [run[i:i + 2] for i in range(len(run) - 1)]


def split_cjk(token: str) -> list[str]:
    """A token with its CJK runs replaced by their bigrams and the text around them kept whole."""
    if not CJK_RUN.search(token):
        return [token]
    out: list[str] = []
    pos = 0
    for m in CJK_RUN.finditer(token):
        if m.start() > pos:
            out.append(token[pos:m.start()])
        out.extend(bigrams(m.group()))
        pos = m.end()
    if pos < len(token):
        out.append(token[pos:])
    return out


def search_words(text: str) -> list[str]:
    """Word runs of normalised, lowercased text, CJK runs as bigrams, first occurrence kept."""
    words = (part for w in _WORD.findall(normalize(text).lower()) for part in split_cjk(w))
    return list(dict.fromkeys(w for w in words if w != "_" * len(w)))


def content_words(texts: Iterable[str]) -> set[str]:
    """The words of `texts` that say what they are about: folded, without function words, plural "s" dropped."""
    words = set()
    for text in texts:
        for word in search_words(text.lower()):
            if word in FUNCTION_WORDS or len(word) < 2:
                continue
            words.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return words
