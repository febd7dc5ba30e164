"""A session's bibliography written out: BibTeX (entries, and each [N] as `\\cite[pp.~12--13]{key}`) and CSL-JSON
(items, and each [N] as a citation item with its page `locator`).

Every value comes from untrusted places (a .bib file, a PDF's metadata and first page, a
file name): control characters are dropped, BibTeX's special characters escaped in text we
write, a .bib value kept as written only when its braces balance (and, unless it comes from
the user's own cite.bib_file, with its TeX commands neutralised: `_inert`), and keys limited
to letters, digits and `_:-.`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtui.sanitize import clean

_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "%": r"\%", "#": r"\#",
            "_": r"\_", "^": r"\^{}", "~": r"\~{}"}
_KEY_CHARS = re.compile(r"[^A-Za-z0-9_:.\-]")
# BibTeX entry types -> CSL item types (CSL 1.0.2 specification, "Appendix III - Types")
CSL_TYPES = {"article": "article-journal", "book": "book", "booklet": "pamphlet", "inbook": "chapter",
             "incollection": "chapter", "inproceedings": "paper-conference", "conference": "paper-conference",
             "manual": "report", "mastersthesis": "thesis", "phdthesis": "thesis", "techreport": "report",
             "online": "webpage", "misc": "document", "unpublished": "manuscript"}
_CSL_FIELDS = {"journal": "container-title", "booktitle": "container-title", "publisher": "publisher",
               "doi": "DOI", "url": "URL", "volume": "volume", "number": "issue", "isbn": "ISBN"}


@dataclass(frozen=True)
class Reference:
    """One cited document as a bibliography entry."""

    key: str
    entry_type: str                          # BibTeX type, lower case
    title: str
    authors: tuple[str, ...] = ()            # "Family, Given" or a name as written
    year: str = ""
    origin: str = "file"                     # where the metadata came from: "bib", "pdf", "page" or "file"
    trusted: bool = False                    # a .bib value from the user's own cite.bib_file: its TeX stays
    fields: Mapping[str, str] = field(default_factory=dict)   # a .bib entry's own fields, as written there
    documents: tuple[str, ...] = ()          # "collection/source" of the documents it stands for


@dataclass(frozen=True)
class Citation:
    """Source [number] of a turn, as a citation of a reference at its pages."""

    number: int
    turn: int
    key: str
    pages: str = ""            # "12" or "12-13"; "" when the document has no pages


def line(text: str) -> str:
    """Untrusted text as one line: escape sequences and controls dropped, whitespace runs one space, a lone
    surrogate (an undecodable byte of a file name) replaced."""
    return " ".join(clean(text).split()).encode("utf-8", "replace").decode("utf-8")


def safe_key(text: str) -> str:
    return _KEY_CHARS.sub("", line(text))[:64]


def escape(text: str) -> str:
    """Text as a BibTeX value: one line, BibTeX's special characters escaped."""
    return "".join(_SPECIAL.get(c, c) for c in line(text))


def bibtex(references: Sequence[Reference], citations: Sequence[Citation], *, title: str = "",
           notes: Sequence[str] = ()) -> str:
    """The .bib text: a comment naming each [N] as a LaTeX citation, then one entry per reference."""
    lines = [f"% ragtui: {escape(title)}" if title else "% ragtui"]
    lines += [f"% note: {escape(note)}" for note in notes]
    lines += [f"% [{c.number}] {latex_cite(c)}" + (f"  (turn {c.turn})" if c.turn > 1 else "") for c in citations]
    lines.append("")
    for ref in references:
        lines.append(f"@{ref.entry_type}{{{ref.key},")
        for name, value in _bib_fields(ref):
            lines.append(f"  {name} = {{{value}}},")
        lines.append("}")
        lines.append("")
    return "\n".join(lines)


def latex_cite(citation: Citation) -> str:
    """`\\cite[pp.~12--13]{key}`, `\\cite[p.~12]{key}` or `\\cite{key}`."""
    if not citation.pages:
        return f"\\cite{{{citation.key}}}"
    first, _, last = citation.pages.partition("-")
    locator = f"pp.~{escape(first)}--{escape(last)}" if last else f"p.~{escape(first)}"
    return f"\\cite[{locator}]{{{citation.key}}}"


def csl_json(references: Sequence[Reference], citations: Sequence[Citation], *, notes: Sequence[str] = ()) -> str:
    """{"items": CSL-JSON items (one per reference), "citations": one CSL citation per [N], with its locator, and
    "notes" when some metadata could not be read}."""
    items = [csl_item(ref) for ref in references]
    cites = [{"number": c.number, "turn": c.turn,
              "citationItems": [{"id": c.key, **({"locator": c.pages, "label": "page"} if c.pages else {})}]}
             for c in citations]
    out: dict[str, Any] = {"items": items, "citations": cites}
    if notes:
        out["notes"] = [line(note) for note in notes]
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def csl_item(ref: Reference) -> dict[str, Any]:
    item: dict[str, Any] = {"id": ref.key, "type": CSL_TYPES.get(ref.entry_type, "document"),
                            "title": _plain(ref.title)}
    if ref.authors:
        item["author"] = [_csl_name(a) for a in ref.authors]
    if ref.year.isdigit():
        item["issued"] = {"date-parts": [[int(ref.year)]]}
    for name, csl in _CSL_FIELDS.items():
        if ref.fields.get(name) and csl not in item:
            item[csl] = _plain(ref.fields[name])
    return item


def _bib_fields(ref: Reference) -> list[tuple[str, str]]:
    if ref.origin == "bib":
        keep = _kept if ref.trusted else _inert
        return [(name, keep(value)) for name, value in ref.fields.items() if re.fullmatch(r"[a-z][\w\-]*", name)]
    out = [("title", escape(ref.title))]
    if ref.authors:
        out.append(("author", " and ".join(escape(a) for a in ref.authors)))
    if ref.year:
        out.append(("year", escape(ref.year)))
    out.append(("note", escape(f"{', '.join(ref.documents)} (metadata from the {_ORIGINS[ref.origin]})")))
    return out


_ORIGINS = {"pdf": "PDF's metadata and first page", "page": "page's title", "file": "file name"}


def _kept(value: str) -> str:
    """A .bib value as written when its braces balance (its own TeX markup stays), else escaped."""
    text = line(value)
    depth = 0
    for c in text:
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth < 0:
            return escape(text)
    return text if depth == 0 and not text.endswith("\\") else escape(text)


# What a value from a .bib found beside the documents (written by anyone) may keep of TeX: the accents and letters
# of names and titles (`{\"o}`, `\'e`, `\ss`, `\o`) and escaped specials (`\&`). Every other command
# (`\input`, `\immediate\write18`, `\def`) loses its backslash's meaning, and `^^` (TeX's notation for any
# character, `^^5c` a backslash) its circumflexes'.
_ACCENTS = frozenset("\"'`^~=.") | frozenset("uvHcdbtrk")
_LETTERS = frozenset({"o", "O", "l", "L", "ss", "ae", "AE", "oe", "OE", "aa", "AA", "i", "j"})
_ESCAPES = frozenset("&%$#_{} ")
_TEX = re.compile(r"\\([A-Za-z]+|[^A-Za-z]?)|\^\^")


def _inert(value: str) -> str:
    """A value from a .bib someone else wrote, its TeX commands neutralised (see _ACCENTS), braces kept when they
    balance (as `_kept`)."""
    def token(match: re.Match[str]) -> str:
        if match.group(0) == "^^":
            return r"\^{}\^{}"
        name = match.group(1)
        if name in _ACCENTS or name in _LETTERS or name in _ESCAPES:
            return match.group(0)
        return r"\textbackslash{}" + "".join(_SPECIAL.get(c, c) for c in name)

    return _kept(_TEX.sub(token, line(value)))


def _plain(value: str) -> str:
    """A value without TeX's grouping braces, for CSL (which takes plain text)."""
    return line(value.replace("{", "").replace("}", ""))


def _csl_name(name: str) -> dict[str, str]:
    family, comma, given = _plain(name).partition(",")
    if comma:
        return {"family": family.strip(), "given": given.strip()}
    parts = family.split()
    if len(parts) > 1:
        return {"family": parts[-1], "given": " ".join(parts[:-1])}
    return {"literal": family.strip()}
