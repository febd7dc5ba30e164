"""A file's sentences, for the sentence-level keyword index of sentence-window retrieval ([strategies]
sentence_window; the search and the window are retrieve/sentence_window.py).

The split is LlamaIndex's: SentenceWindowNodeParser's default splitter (`split_by_sentence_tokenizer`), NLTK's
Punkt tokenizer, each sentence running from its start to the next one's, so consecutive sentences put back
together are the document's text. It splits the file's whole extracted text, not its chunks (chunks
overlap: a sentence in two chunks would be indexed twice). Each sentence belongs to the first chunk whose
span holds its start; text no chunk holds (dropped by the entropy or table-of-contents filters) gives no
sentence. A sentence longer than MAX_SENTENCE_CHARS (a table, a list without full stops) is cut at spaces.

A sentence is stored as a `Chunk`: id `<the file's chunk-id digest>-s<n>` (n counts the file's sentences,
so a window is the ids n-w..n+w), its text, and its chunk's metadata with the sentence's own span and page
(`chunk_index` names the chunk it belongs to: `chunk_id(source, chunk_index)`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from ragtui.ingest.chunking import page_at
from ragtui.model.chunks import Chunk, sentence_id

MAX_SENTENCE_CHARS = 1_000
Pages = Sequence[tuple[int, str, int]]     # (offset into the text, page label, page index), as the records keep them


def file_sentences(text: str, pages: Pages, chunks: Sequence[Chunk]) -> list[Chunk]:
    """The sentences of one file's extracted `text` that its `chunks` hold, in order (see the module docstring)."""
    ordered = sorted(chunks, key=lambda c: c.meta.char_start)
    if not ordered:
        return []
    ends = [c.meta.char_end for c in ordered]
    page_starts = [p[0] for p in pages]
    out: list[Chunk] = []
    for start, end in _spans(text):
        owner = _owner(ordered, ends, start)
        if owner is None or not text[start:end].strip():
            continue
        source = owner.meta.source
        label, index = owner.meta.page, owner.meta.page_index      # a file without pages: its chunk's
        if pages:
            _, label, index = pages[page_at(pages, page_starts, start)]
        piece = text[start:end]
        meta = replace(owner.meta, char_start=start, char_end=end, page=str(label), page_index=int(index),
                       page_breaks="", lead=0, word_count=len(piece.split()))
        out.append(Chunk(id=sentence_id(source, len(out)), text=piece, meta=meta))
    return out


def _spans(text: str) -> Iterator[tuple[int, int]]:
    """Each sentence's (start, end), end the next one's start; long ones cut at a space."""
    starts = [s for s, _ in _tokenizer().span_tokenize(text)]
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        while end - start > MAX_SENTENCE_CHARS:
            cut = text.rfind(" ", start + 1, start + MAX_SENTENCE_CHARS)
            cut = cut + 1 if cut > start else start + MAX_SENTENCE_CHARS
            yield start, cut
            start = cut
        yield start, end


def _tokenizer() -> Any:
    """SentenceWindowNodeParser's default splitter's Punkt tokenizer (LlamaIndex keeps the NLTK data)."""
    from llama_index.core.utils import globals_helper

    return globals_helper.punkt_tokenizer


def _owner(chunks: Sequence[Chunk], ends: Sequence[int], at: int) -> Chunk | None:
    """The first chunk whose span holds offset `at` (chunks in text order end in text order too)."""
    i = bisect.bisect_right(ends, at)
    return chunks[i] if i < len(chunks) and chunks[i].meta.char_start <= at else None

