"""A saved session's citations checked again against the documents as they are now: text matching over the
collection's stored chunks, no model, no embedder.

What a source is held to is what the session relied on it for: the quotes its annotation gives as evidence
(`quotes.found_quotes`) and the answer's quotes attributed to it and found in it (`quotes.check_quotes`, through
`llm.citations.quote_checks`); a source with neither is held to its chunk's whole text. Each is looked up with
the one quote matcher, `quotes.occurs`, in the file's chunks as the collection now stores them:

- `current`: the chunk with the same id still holds every quote, on the same page (or is the same text);
- `moved`: every quote is still in the document, but in another chunk or on another page (`chunk_id`, `pages`
  and `label` say where);
- `changed`: the document is still in the collection and a quote is not in it (`missing` names it);
- `gone`: the file (or its collection) is no longer there.

Pure: the caller says where a file's chunks are now (`ChunksNow`), the Workspace stores the result in the history.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import pairwise

from ragtui.llm.citations import quote_checks
from ragtui.model.chunks import Chunk
from ragtui.model.citation_check import CitationCheck, CitationState, SessionCheck
from ragtui.model.conversation import Conversation, SessionSource
from ragtui.quotes import found_quotes, occurs

# (collection, source) -> the file's chunks as its collection now stores them, in document order; None when the
# file (or the collection) is gone.
ChunksNow = Callable[[str, str], Sequence[Chunk] | None]


def recheck(conversation: Conversation, chunks_now: ChunksNow, *, at: str = "") -> SessionCheck:
    """Every source of every turn of `conversation`, checked against its file's chunks now; `at` is when. The
    quotes are read only for a source whose chunk is not there as it was (most are, and reading them is most
    of the work)."""
    answer_quotes: dict[int, list[str]] | None = None
    checks = []
    for source in conversation.all_sources:
        now = chunks_now(source.chunk.meta.collection, source.chunk.meta.source)
        if _same_chunk(source.chunk, now) is not None:
            check = CitationCheck(source.number, CitationState.CURRENT, checked_at=at)
        else:
            if answer_quotes is None:
                answer_quotes = _answer_quotes(conversation)
            check = _check(source, (*_evidence(source), *answer_quotes.get(source.number, ())), now, at)
        checks.append(replace(check, cited=source.chunk.label))
    return SessionCheck(conversation.id or 0, conversation.query, tuple(checks))


def _same_chunk(old: Chunk, now: Sequence[Chunk] | None) -> Chunk | None:
    """The chunk of `now` with `old`'s id, text and pages: the citation stands exactly where it stood."""
    same = next((c for c in now or () if c.id == old.id), None)
    return same if same is not None and same.text == old.text and same.meta.pages == old.meta.pages else None


def _check(source: SessionSource, quotes: Sequence[str], now: Sequence[Chunk] | None, at: str) -> CitationCheck:
    """A source whose chunk is not there as it was, held to `quotes` (its chunk's whole text when there are
    none) in its file's chunks `now`."""
    if now is None:
        return CitationCheck(source.number, CitationState.GONE, checked_at=at)
    old = source.chunk
    same = next((c for c in now if c.id == old.id), None)
    if not quotes:
        twin = next((c for c in now if c.text == old.text), None)
        if twin is None:
            return CitationCheck(source.number, CitationState.CHANGED, checked_at=at)
        return _moved(source.number, twin, (), at)
    quotes = tuple(dict.fromkeys(quotes))
    if same is not None and all(occurs(q, same.text) for q in quotes):
        if _quote_pages(same, quotes) == _quote_pages(old, quotes):
            return CitationCheck(source.number, CitationState.CURRENT, checked_at=at)
        return _moved(source.number, same, quotes, at)
    holder = next((c for c in now if all(occurs(q, c.text) for q in quotes)), None)
    if holder is not None:
        return _moved(source.number, holder, quotes, at)
    missing = next((q for q in quotes if _holder(q, now) is None), None)
    if missing is not None:
        return CitationCheck(source.number, CitationState.CHANGED, missing=missing, checked_at=at)
    first = _holder(quotes[0], now)
    assert first is not None       # every quote has a holder here
    return _moved(source.number, first, quotes[:1], at)


def _holder(quote: str, now: Sequence[Chunk]) -> Chunk | None:
    """The first chunk that holds `quote`, or the first of two neighbours that hold it across their cut."""
    found = next((c for c in now if occurs(quote, c.text)), None)
    if found is None:
        found = next((a for a, b in pairwise(now) if occurs(quote, f"{a.span_text}\n{b.span_text}")), None)
    return found


def _moved(number: int, chunk: Chunk, quotes: Sequence[str], at: str) -> CitationCheck:
    pages = _quote_pages(chunk, quotes) if quotes else chunk.meta.pages
    return CitationCheck(number, CitationState.MOVED, chunk_id=chunk.id, pages=pages, label=chunk.label,
                         checked_at=at)


def _quote_pages(chunk: Chunk, quotes: Sequence[str]) -> str:
    """The page the first quote lies on within `chunk` (`ChunkMeta.page_of`), else the chunk's pages."""
    return chunk.meta.page_of(chunk.text, lambda part: occurs(quotes[0], part)) or chunk.meta.pages


def _evidence(source: SessionSource) -> tuple[str, ...]:
    return found_quotes(source.annotation, source.chunk.text) if source.annotation else ()


def _answer_quotes(conversation: Conversation) -> dict[int, list[str]]:
    """source number -> the quotes of any turn's answer attributed to it that its stored text held."""
    texts = {s.number: s.chunk.text for s in conversation.all_sources}
    out: dict[int, list[str]] = {}
    for turn in conversation.turns:
        if not turn.answer:
            continue
        for check in quote_checks(turn.answer, texts):
            for n in check.cited:
                if n in check.found_in:
                    out.setdefault(n, []).append(check.quote)
    return out
