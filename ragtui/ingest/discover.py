"""Which files an ingest of some paths covers, and under which source names.

A folder's files are named relative to it ("notes/a.md"); a file given directly
by its own name. Symlinked folders are followed once (a loop is reported, never
walked); sockets, FIFOs and devices are reported, never opened. Hidden entries and
paths matched by the ignore rules (`ingest.ignore` plus the folder's own
`.ragtuiignore`, both in gitignore syntax via pathspec) are only counted: a build
tree has thousands of them, and a list would bury the skips that matter.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtui.ingest.extract import Skip

IGNORE_FILE = ".ragtuiignore"
HIDDEN = "hidden"
IGNORED = "ignore rules"


@dataclass(frozen=True)
class Entry:
    source: str
    root: str                 # absolute folder (or file) given on the command line; "" for in-memory text
    path: Path | None = None
    text: str | None = None   # in-memory documents (ingest_documents)


def _stat_problem(path: Path) -> str | None:
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop"
        if exc.errno == errno.ENOENT:
            return "broken symlink" if path.is_symlink() else "file vanished"
        return f"unreadable: {exc.strerror}"
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return "not a regular file (socket, FIFO or device)"
    return None


def ignore_spec(root: Path, patterns: Sequence[str]) -> Any:
    """The gitignore-style rules for a folder: `patterns` (ingest.ignore), then its .ragtuiignore lines."""
    import pathspec

    lines = list(patterns)
    with contextlib.suppress(OSError):       # no .ragtuiignore (or unreadable): the configured rules alone
        lines += (root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def discover(paths: Sequence[Path], ignore: Sequence[str] = ()
             ) -> tuple[list[Entry], list[Skip], list[str], Counter[str]]:
    """(files to ingest, entries skipped with a reason, folder roots that `--sync` may prune, paths
    left out uncounted-by-name: hidden ones and those the ignore rules match)."""
    entries: list[Entry] = []
    skips: list[Skip] = []
    roots: list[str] = []
    ignored: Counter[str] = Counter()
    seen: dict[str, str] = {}
    for given in paths:
        path = Path(given).expanduser()
        problem = _stat_problem(path) if path.exists() or path.is_symlink() else "no such file or folder"
        if problem:
            skips.append(Skip(str(given), problem))
            continue
        root = path.resolve()
        if root.is_file():
            found = [Entry(path.name, str(root), root)]
        else:
            roots.append(str(root))
            found = _walk(root, skips, ignored, ignore_spec(root, ignore))
        for entry in found:
            if seen.get(entry.source, entry.root) != entry.root:
                skips.append(Skip(f"{entry.root}/{entry.source}",
                                  f"name clash: {entry.source} also comes from {seen[entry.source]}"))
                continue
            if entry.source not in seen:
                seen[entry.source] = entry.root
                entries.append(entry)
    return entries, skips, roots, ignored


def _walk(root: Path, skips: list[Skip], ignored: Counter[str], spec: Any) -> list[Entry]:
    out: list[Entry] = []
    visited = {os.stat(root).st_ino}
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            skips.append(Skip(_rel(folder, root) + "/", f"unreadable folder: {exc.strerror}"))
            continue
        subdirs = []
        for name in names:
            path = folder / name
            rel = _rel(path, root)
            if name.startswith("."):
                ignored[HIDDEN] += 1
                continue
            problem = _stat_problem(path)
            if problem:
                skips.append(Skip(rel, problem))
            elif spec.match_file(rel + "/" if path.is_dir() else rel):
                ignored[IGNORED] += 1
            elif path.is_dir():
                inode = os.stat(path).st_ino
                if inode in visited:
                    skips.append(Skip(rel + "/", "symlink loop (folder already walked)"))
                else:
                    visited.add(inode)
                    subdirs.append(path)
            else:
                out.append(Entry(rel, str(root), path))
        stack.extend(reversed(subdirs))
    return sorted(out, key=lambda e: e.source)


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()
