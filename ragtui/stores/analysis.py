"""The keyword index's analyzer: Whoosh's stemming chain plus compatibility folding and CJK bigrams.

Imported only where Whoosh is (it subclasses Whoosh's Filter). The index pickles its
analyzer into its schema, so these classes keep their module path; an index whose
pickled analyzer differs from `analyzer()` is rebuilt from the records on the next
ingest (`KeywordIndex.outdated`).
The query side cuts words with `ragtui.text.search_words`, the same rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ragtui import heavy

heavy.load("whoosh")  # first, so that this module's imports of it are lookups (ragtui/heavy.py)
from whoosh.analysis import Filter, LowercaseFilter, RegexTokenizer, StemFilter, StopFilter  # noqa: E402

from ragtui.text import normalize, split_cjk  # noqa: E402


class NormalizeFilter(Filter):
    """Folds compatibility characters in each token ("ﬁle" -> "file"), as ingest folds the text."""

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:
        for t in tokens:
            t.text = normalize(t.text)
            yield t


class CJKBigramFilter(Filter):
    """Splits CJK runs inside a token into overlapping bigrams; later positions shift accordingly."""

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:
        shift = 0
        for t in tokens:
            parts = split_cjk(t.text)
            if len(parts) == 1:
                if t.positions:
                    t.pos += shift
                yield t
                continue
            base = t.pos if t.positions else 0
            for k, part in enumerate(parts):
                t.text = part
                if t.positions:
                    t.pos = base + shift + k
                yield t
            shift += len(parts) - 1


def analyzer() -> Any:
    """Tokenise, fold, bigram CJK, lowercase, drop stop words, stem (Whoosh's StemmingAnalyzer + 2 filters)."""
    return (RegexTokenizer() | NormalizeFilter() | CJKBigramFilter() | LowercaseFilter()
            | StopFilter() | StemFilter())
