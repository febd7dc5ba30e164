"""The references of a research session: one per cited document, and each cited [N] as a citation at its pages.

Metadata for a document, first found wins:

1. an entry of a BibTeX file whose `file` field names the document (Zotero's Better
   BibTeX export writes one per attachment): the file `cite.bib_file` names, then every
   `*.bib` beside the document and in the folder it was ingested from (those came with the documents, from
   anyone: their TeX commands are neutralised in the export, the user's own file's are kept);
2. for a PDF, its own metadata (title, author, creation year) and its first page (the
   first line of some length as the title, the first plausible year), read from the
   original file when it is still there and from the collection's extracted text;
3. the file name as the title.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ragtui.bibliography.bibfile import BibEntry, files_to_entries, read_bib
from ragtui.bibliography.render import Citation, Reference, line, safe_key
from ragtui.model.conversation import Conversation, SessionSource

if TYPE_CHECKING:
    from ragtui.library import Collection

MAX_BIB_FILES = 16          # .bib files read beside one document
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_TITLE_CHARS = (12, 300)    # a first-page line taken as a title is this long


@dataclass
class MetadataLookup:
    """Finds each document's metadata; .bib files are read once per lookup."""

    bib_file: Path | None
    collection: Callable[[str], Collection | None]     # an open collection by name, None when it cannot be opened
    _bibs: dict[Path, dict[str, BibEntry]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)     # files that could not be read, said to the user

    def reference(self, collection: str, source: str) -> Reference:
        name = PurePosixPath(source).name
        opened = self.collection(collection)
        original = opened.original(source) if opened is not None else None
        for bib in self._bib_paths(opened, source, original):
            entry = self._entries(bib).get(name.casefold())
            if entry is not None:
                return _from_bib(entry, trusted=bib == self.bib_file)
        if name.lower().endswith(".pdf") and opened is not None:
            found = _from_pdf(opened, source, original)
            if found is not None:
                return found
        if name.lower().endswith((".html", ".htm", ".xhtml")) and original is not None:
            from ragtui.bibliography.page_title import page_title

            if title := page_title(original):
                return Reference(key="", entry_type="misc", title=title, origin="page")
        return Reference(key="", entry_type="misc", title=name, origin="file")

    def _bib_paths(self, opened: Collection | None, source: str, original: Path | None) -> list[Path]:
        paths = [self.bib_file] if self.bib_file is not None else []
        if opened is not None and original is not None:
            record = opened.records.file(source)
            root = Path(record.root) if record is not None and record.root else original.parent
            for folder in dict.fromkeys((original.parent, root if root.is_dir() else root.parent)):
                try:
                    paths += sorted(folder.glob("*.bib"))[:MAX_BIB_FILES]
                except OSError:
                    continue
        return paths

    def _entries(self, path: Path) -> dict[str, BibEntry]:
        if path not in self._bibs:
            try:
                self._bibs[path] = files_to_entries(read_bib(path)) if path.is_file() else {}
            except OSError as exc:
                self.notes.append(f"cannot read {path}: {exc.strerror or exc}")
                self._bibs[path] = {}
        return self._bibs[path]


def cited_sources(conversation: Conversation) -> list[tuple[int, SessionSource]]:
    """(turn, source) of every source an answer cites, in number order: the turn whose answer cites it (a
    research run's report cites the sources of the searches before it)."""
    cited: dict[int, int] = {}
    for index, turn in enumerate(conversation.turns, start=1):
        for number in turn.citations:
            cited.setdefault(number, index)
    return [(cited[s.number], s) for s in conversation.all_sources if s.number in cited]


def references(conversation: Conversation, lookup: MetadataLookup) -> tuple[list[Reference], list[Citation]]:
    """One reference per cited document (keys unique), and each cited [N] as a citation of it at its pages."""
    by_document: dict[tuple[str, str], Reference] = {}
    citations: list[tuple[int, SessionSource, tuple[str, str]]] = []
    for turn, source in cited_sources(conversation):
        doc = (source.chunk.meta.collection, source.chunk.meta.source)
        if doc not in by_document:
            by_document[doc] = lookup.reference(*doc)
        citations.append((turn, source, doc))
    refs, key_of = _keyed(by_document)
    return refs, [Citation(s.number, turn, key_of[doc], line(s.chunk.meta.pages)) for turn, s, doc in citations]


def _keyed(by_document: dict[tuple[str, str], Reference]) -> tuple[list[Reference], dict[tuple[str, str], str]]:
    """The references with unique keys (a .bib key kept; two documents of one .bib entry share it)."""
    refs: dict[str, Reference] = {}
    key_of: dict[tuple[str, str], str] = {}
    for doc, ref in by_document.items():
        key = safe_key(ref.key) if ref.origin == "bib" else ""
        if key and key in refs and refs[key].origin == "bib" and refs[key].fields == ref.fields:
            refs[key] = replace(refs[key], documents=(*refs[key].documents, "/".join(doc)))
            key_of[doc] = key
            continue
        base = key or _made_key(ref, doc[1])
        key, n = base, 1
        while key in refs:
            n += 1
            key = f"{base}-{n}"
        refs[key] = replace(ref, key=key, documents=("/".join(doc),))
        key_of[doc] = key
    return list(refs.values()), key_of


def _made_key(ref: Reference, source: str) -> str:
    """`family` + `year` + first title word (`smith2020cooling`), or the file name's stem."""
    family = ref.authors[0].split(",")[0].split()[-1] if ref.authors and ref.authors[0].strip() else ""
    word = next((w for w in re.findall(r"[^\W\d_]{4,}", ref.title)), "") if ref.origin == "pdf" else ""
    made = safe_key(f"{family}{ref.year}{word}".lower()) if family or ref.year else ""
    return made or safe_key(PurePosixPath(source).stem.replace(" ", "-")) or "document"


def _from_bib(entry: BibEntry, *, trusted: bool) -> Reference:
    """`trusted`: the entry comes from the user's own cite.bib_file (its TeX is kept as written); a .bib found
    beside the documents came with them, from anyone (render.py neutralises its TeX commands)."""
    authors = tuple(a.strip() for a in re.split(r"\s+and\s+", entry.fields.get("author", "")) if a.strip())
    year = _YEAR.search(entry.fields.get("year", "") or entry.fields.get("date", ""))
    return Reference(key=entry.key, entry_type=entry.entry_type, title=entry.fields.get("title", ""),
                     authors=authors, year=year.group() if year else "", origin="bib", fields=dict(entry.fields),
                     trusted=trusted)


def _from_pdf(collection: Collection, source: str, original: Path | None) -> Reference | None:
    """Title, authors and year from the PDF's metadata, else its first page; None when neither gives a title."""
    meta = _pdf_metadata(original) if original is not None else {}
    first_page = _first_page(collection, source)
    title = line(meta.get("title", ""))
    if not title:
        title = next((ln for ln in (line(x) for x in first_page.splitlines())
                      if _TITLE_CHARS[0] <= len(ln) <= _TITLE_CHARS[1]), "")
    if not title:
        return None
    made_by = f"{meta.get('creator', '')} {meta.get('producer', '')}".casefold()
    authors = tuple(a for a in (line(x) for x in re.split(r";|\band\b|,(?=\s*\S+\s+\S)", meta.get("author", "")))
                    if a and a.casefold() not in made_by)     # "gnuplot" wrote the file, no person did
    year = _YEAR.search(meta.get("creationDate", "")[2:6]) or _YEAR.search(first_page)
    return Reference(key="", entry_type=_pdf_type(title, first_page), title=title, authors=authors,
                     year=year.group() if year else "", origin="pdf")


# A PDF says it is a manual in its title or on its first page; nothing in a PDF's metadata names a journal, so
# without a .bib entry it is @misc (BibTeX styles want a journal for @article and warn without one).
_MANUAL = re.compile(r"\b(manual|user'?s guide|reference guide|handbook|documentation)\b", re.IGNORECASE)


def _pdf_type(title: str, first_page: str) -> str:
    return "manual" if _MANUAL.search(title) or _MANUAL.search(first_page[:1000]) else "misc"


def _pdf_metadata(path: Path) -> dict[str, str]:
    from ragtui import heavy

    heavy.load()
    import pymupdf

    try:
        with pymupdf.open(str(path)) as doc:
            return {k: str(v) for k, v in (doc.metadata or {}).items() if isinstance(v, str)}
    except Exception:  # a PDF that changed or broke since it was ingested: its first page still serves
        return {}


def _first_page(collection: Collection, source: str) -> str:
    try:
        found = collection.records.document(source)
    except Exception:  # a damaged records file: no first page
        return ""
    if found is None:
        return ""
    text, pages = found
    end = pages[1][0] if len(pages) > 1 else min(len(text), 4000)
    return text[:end][:4000]
