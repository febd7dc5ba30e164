"""A search filter (`model.filters.SearchFilter`) resolved against one collection, for both retrieval legs.

The collection's records name its indexed files and each chunk's heading path, so a
filter becomes the files it leaves and, when a heading narrows further, the chunk ids.
The keyword leg scores only those documents (a mask beside the live-document mask,
`KeywordView.within`); the vector leg asks Chroma for the nearest among them (a `where`
on the `source` metadata for whole files, its `ids` for chunks). Both rank inside the
filter, so a narrow filter still fills its top k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragtui.model.filters import SearchFilter

if TYPE_CHECKING:
    from ragtui.stores.records import IngestRecords


@dataclass(frozen=True)
class FilterScope:
    """The part of one collection a filter leaves: its files, and the chunk ids when a heading filter narrows."""

    sources: tuple[str, ...]
    ids: frozenset[str] | None = None

    @property
    def empty(self) -> bool:
        return not self.sources or (self.ids is not None and not self.ids)


def resolve(records: IngestRecords, search_filter: SearchFilter) -> FilterScope:
    """The indexed files (zip containers aside, their members count) and chunks inside the filter."""
    from ragtui.stores.records import DONE

    sources = tuple(f.source for f in records.files(DONE)
                    if f.format != "zip" and search_filter.path_matches(f.source))
    if not search_filter.headings or not sources:
        return FilterScope(sources)
    ids = frozenset(cid for cid, heading in records.headings(sources) if search_filter.heading_matches(heading))
    return FilterScope(sources, ids)
