"""Search filters: what part of a collection a query may search, by file path and by heading.

    path:docs/*.pdf      files whose path (as ingested, relative to the ingested folder) matches the glob
    path:report.pdf      a pattern without "/" also matches the file name in any folder
    path:docs/           a pattern ending in "/" means everything under that folder
    heading:Results      chunks whose heading path ("Intro > Results") holds the words, case-insensitive
    docs/*.pdf           a value without a kind is a path glob
    pth:foo              a word before ":" that is not a kind is refused (path:a:b is a glob holding ":")

Several values of one kind widen the search (any may match); different kinds narrow it
(each kind must match). Globs follow `fnmatch` (`*` also crosses "/"), case-sensitive like
the file systems paths come from. A filter narrows both retrieval legs before they rank, so
the top hits of a filtered search are the best passages inside the filter, not the few of
the unfiltered top that happen to lie inside it.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ragtui.errors import RagtuiError

KINDS = ("path", "heading")
# A word before ":" that reads as a kind (`pth:foo`, `page:100-200`, `Heading:x`): a misspelt or unknown kind,
# refused, rather than a path glob no file matches.
_KIND_LIKE = re.compile(r"[A-Za-z][A-Za-z_-]*")
MAX_VALUES = 32            # filter values in one search
MAX_VALUE_CHARS = 512      # characters in one value


class FilterError(RagtuiError):
    """A filter the user wrote that cannot be read: a usage error (exit code 2)."""

    exit_code = 2


@dataclass(frozen=True)
class SearchFilter:
    paths: tuple[str, ...] = ()       # globs on the source path
    headings: tuple[str, ...] = ()    # words the heading path must hold (case-insensitive)

    def __bool__(self) -> bool:
        return bool(self.paths or self.headings)

    def path_matches(self, source: str) -> bool:
        return not self.paths or any(_glob_matches(p, source) for p in self.paths)

    def heading_matches(self, heading: str) -> bool:
        if not self.headings:
            return True
        folded = " ".join(heading.casefold().split())
        return any(h in folded for h in self._folded_headings())

    def matches(self, source: str, heading: str) -> bool:
        """Whether a chunk of this file under this heading path lies inside the filter."""
        return self.path_matches(source) and self.heading_matches(heading)

    def chips(self) -> list[str]:
        """Each value as it is written (`path:docs/*.pdf`), for chips, notices and exports."""
        return [f"{kind}:{_quoted(v)}" for kind, values in (("path", self.paths), ("heading", self.headings))
                for v in values]

    def to_json(self) -> dict[str, Any]:
        return {"path": list(self.paths), "heading": list(self.headings)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> SearchFilter:
        """The stored form back; values that are not strings (a damaged or foreign record) are left out."""
        if not isinstance(data, Mapping):
            return cls()
        return cls(paths=_strings(data.get("path")), headings=_strings(data.get("heading")))

    def _folded_headings(self) -> list[str]:
        return [" ".join(h.casefold().split()) for h in self.headings]


def parse_filters(specs: Iterable[str]) -> SearchFilter:
    """`-f` values (`path:GLOB`, `heading:WORDS`, or a bare glob) as one filter; FilterError on a bad one."""
    paths: list[str] = []
    headings: list[str] = []
    for spec in specs:
        kind, value = _split(spec)
        (paths if kind == "path" else headings).append(value)
    if len(paths) + len(headings) > MAX_VALUES:
        raise FilterError(f"too many filters ({len(paths) + len(headings)}); at most {MAX_VALUES}")
    return SearchFilter(paths=tuple(dict.fromkeys(paths)), headings=tuple(dict.fromkeys(headings)))


def split_query(text: str) -> tuple[str, SearchFilter]:
    """A typed query with its `path:` and `heading:` words lifted out as a filter (quotes group a value:
    `heading:"Related work"`); the rest is the question. Text that does not split as shell words (an
    unclosed quote) is all question."""
    try:
        words = shlex.split(text, posix=True)
    except ValueError:
        return text, SearchFilter()
    specs = [w for w in words if _kind_of(w) is not None]
    if not specs:
        return text, SearchFilter()
    rest = [w for w in words if _kind_of(w) is None]
    return " ".join(rest), parse_filters(specs)


def _kind_of(word: str) -> str | None:
    head, sep, _ = word.partition(":")
    return head if sep and head in KINDS else None


def _split(spec: str) -> tuple[str, str]:
    kind = _kind_of(spec)
    head, sep, _ = spec.partition(":")
    if not kind and sep and _KIND_LIKE.fullmatch(head):
        raise FilterError(f"unknown filter kind {head!r} in {spec!r}: the kinds are {', '.join(KINDS)}",
                          hint=f"write path:{spec} for a path glob that holds ':'")
    value = spec.partition(":")[2] if kind else spec
    kind = kind or "path"
    value = value.strip()
    if not value:
        raise FilterError(f"empty {kind} filter {spec!r}", hint="write path:GLOB or heading:WORDS")
    if len(value) > MAX_VALUE_CHARS:
        raise FilterError(f"a {kind} filter is longer than {MAX_VALUE_CHARS} characters")
    if not value.isprintable():
        raise FilterError(f"the {kind} filter {value!r} holds a control character")
    return kind, value


def _glob_matches(pattern: str, source: str) -> bool:
    if pattern.endswith("/"):
        pattern += "*"
    if fnmatch.fnmatchcase(source, pattern):
        return True
    return "/" not in pattern and fnmatch.fnmatchcase(posixpath.basename(source), pattern)


def _quoted(value: str) -> str:
    return shlex.quote(value) if any(c.isspace() or c in "\"'" for c in value) else value


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()
