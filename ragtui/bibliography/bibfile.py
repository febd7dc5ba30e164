"""Reading a BibTeX file the user keeps (Zotero's Better BibTeX export, JabRef, by hand): its entries, and which
document files each names in its `file` field.

The file is untrusted text: read up to `MAX_BIB_BYTES`, at most `MAX_ENTRIES` entries,
and anything that does not parse as an entry is skipped, never raised. Field values keep
their inner braces; `@string` macros are not expanded (a value written as a macro name
is kept as that name), `@comment`, `@preamble` and text between entries are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

MAX_BIB_BYTES = 8 * 1024 * 1024
MAX_ENTRIES = 50_000
_ENTRY = re.compile(r"@\s*([A-Za-z]+)\s*([{(])")
_KEY = re.compile(r"\s*([^\s,{}()\"#%'=]+)\s*,")
_NAME = re.compile(r"\s*([A-Za-z][\w\-:.+]*)\s*=\s*")
_SKIPPED_TYPES = {"comment", "preamble", "string"}


@dataclass(frozen=True)
class BibEntry:
    key: str
    entry_type: str                                   # lower case: "article", "book", ...
    fields: Mapping[str, str] = field(default_factory=dict)   # lower-case names; values as written, outer braces off

    def files(self) -> list[str]:
        """The base names of the files its `file` field lists (Better BibTeX: paths joined by ";"; JabRef and
        Mendeley: "description:path:type" triples), case-folded."""
        names = []
        for piece in self.fields.get("file", "").split(";"):
            for part in piece.split(":"):
                name = PurePosixPath(part.replace("\\", "/").strip()).name
                if "." in name.strip("."):
                    names.append(name.casefold())
        return names


def read_bib(path: Path) -> list[BibEntry]:
    """The entries of a .bib file (OSError when it cannot be read; undecodable bytes replaced)."""
    with path.open("rb") as handle:
        data = handle.read(MAX_BIB_BYTES)
    return list(parse_bib(data.decode("utf-8", errors="replace")))


def parse_bib(text: str) -> Iterator[BibEntry]:
    at = 0
    count = 0
    while count < MAX_ENTRIES and (match := _ENTRY.search(text, at)):
        kind, opener = match.group(1).lower(), match.group(2)
        closer = "}" if opener == "{" else ")"
        end = _balanced_end(text, match.end(), closer)
        if end < 0:
            return
        at = end + 1
        if kind in _SKIPPED_TYPES:
            continue
        body = text[match.end():end]
        key = _KEY.match(body)
        if key is None:
            continue
        count += 1
        yield BibEntry(key.group(1), kind, _fields(body[key.end():]))


def files_to_entries(entries: list[BibEntry]) -> dict[str, BibEntry]:
    """Case-folded file base name -> the entry whose `file` field names it (the first one wins)."""
    out: dict[str, BibEntry] = {}
    for entry in entries:
        for name in entry.files():
            out.setdefault(name, entry)
    return out


def _balanced_end(text: str, start: int, closer: str) -> int:
    """The index of the `closer` that ends an entry opened before `start` (braces nested), -1 when none."""
    depth = 0
    quoted = False
    for i in range(start, len(text)):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            if depth == 0 and closer == "}":
                return i
            depth = max(0, depth - 1)
        elif c == '"' and depth == 0:
            quoted = not quoted
        elif c == ")" and closer == ")" and depth == 0 and not quoted:
            return i
    return -1


def _fields(body: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    at = 0
    while (name := _NAME.match(body, at)) is not None:
        value, at = _value(body, name.end())
        fields.setdefault(name.group(1).lower(), " ".join(value.split()))
        comma = body.find(",", at)
        if comma < 0:
            break
        at = comma + 1
    return fields


def _value(body: str, at: int) -> tuple[str, int]:
    """One field value (parts joined by "#" concatenated), and where it ends."""
    parts = []
    while at < len(body):
        c = body[at]
        if c == "{":
            end = _balanced_end(body, at + 1, "}")
            end = len(body) if end < 0 else end
            parts.append(body[at + 1:end])
            at = end + 1
        elif c == '"':
            end = at + 1
            depth = 0
            while end < len(body) and (body[end] != '"' or depth):
                depth += {"{": 1, "}": -1}.get(body[end], 0)
                end += 1
            parts.append(body[at + 1:end])
            at = end + 1
        else:
            word = re.match(r"[^,#\s]+", body[at:])
            if word is None:
                break
            parts.append(word.group())
            at += word.end()
        rest = re.match(r"\s*#\s*", body[at:])
        if rest is None:
            break
        at += rest.end()
    return "".join(parts), at
