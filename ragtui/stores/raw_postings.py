"""Whoosh 2.7.4's W3 posting lists read raw: a term's matcher with deleted documents included, every term's
matcher in one pass over the terms file, and a list's blocks decoded with numpy (pinned Whoosh: private API).

Used by the BM25 posting arrays (`postings.py`) and the keyword index's merge (`keyword.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ragtui import heavy

heavy.load("numpy")  # first, so that this module's imports of it are lookups (ragtui/heavy.py)
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402


def raw_matcher(reader: Any, field: str, term: str | bytes) -> Any:
    """The segment's on-disk posting matcher for a term, deleted documents included.

    Not `reader.postings(...).child`: Whoosh's deleted-document filter moves its child past the leading
    deleted postings when it is built, so those would be missing (and a df counted from them short).
    """
    return reader._terms.matcher(field, reader._text_to_bytes(field, term), reader.schema[field].format)


def term_matchers(reader: Any, field: str | None = None) -> Iterator[tuple[str, bytes, Any]]:
    """Every term of the segment (of `field` only, when given) with its raw posting matcher (as `raw_matcher`
    makes it), in the terms file's order. The term infos come from one pass over the terms file (iterating
    Whoosh's reader) instead of a hash-table lookup per term: 9% less CPU for a closing merge at 40k chunks."""
    terms = reader._terms
    pairs = iter(reader) if field is None else reader.iter_from(field, "")
    for (fieldname, btext), terminfo in pairs:
        if field is not None and fieldname != field:
            return
        yield fieldname, btext, terms._codec.postings_reader(terms._postfile, terminfo, reader.schema[fieldname].format,
                                                             term=(fieldname, btext))


def posting_blocks(matcher: Any) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], Any]]:
    """(doc numbers, weights, encoded values) per block of a Whoosh 2.7.4 W3 posting list.

    A block is one pickled tuple of delta-encoded ids, weights (None when all
    1, one float when all equal) and values; decoding it here with numpy skips
    Whoosh's per-posting Python.
    """
    while matcher.is_active():
        matcher._read_data()
        raw_ids, raw_weights, values = matcher._data
        n = matcher._blocklength
        ids = np.cumsum(np.asarray(raw_ids, np.int64))
        if raw_weights is None:
            weights = np.ones(n)
        elif isinstance(raw_weights, float):
            weights = np.full(n, raw_weights)
        else:
            weights = np.asarray(raw_weights, np.float64)
        yield ids, weights, values
        matcher._next_block()
