"""Which files an ingest of some paths covers, and under which source names.

A folder's files are named relative to it ("notes/a.md"); a file given directly
by its own name. Symlinked folders are followed once (a loop, keyed on device and
inode, is reported, never walked); sockets, FIFOs and devices are reported, never
opened. A link whose target lies outside the folder given on the command line is
reported and not followed unless `ingest.follow_links_outside` is on (a link to a
system file or a private folder would otherwise be indexed). A name that is not
valid UTF-8 is reported (escaped by `one_line`) instead of failing the records,
which store names as text. Hidden entries and
paths matched by the ignore rules (`ingest.ignore` plus the folder's own
`.ragtuiignore`, both in gitignore syntax via pathspec) are only counted: a build
tree has thousands of them, and a list would bury the skips that matter. BibTeX
files in a folder are counted too: they are the bibliography export's source of
citation keys, not documents (one named on the command line is ingested as asked).
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

from ragtui.ingest.extracted import Skip
from ragtui.paths import user_path
from ragtui.sanitize import one_line

IGNORE_FILE = ".ragtuiignore"
HIDDEN = "hidden"
IGNORED = "ignore rules"
BIBLIOGRAPHY = "*.bib (BibTeX, read by the bibliography export)"
NOT_UTF8 = "file name is not valid UTF-8: rename it to ingest it"
LEAVES_ROOT = "link leaves the ingested folder (not followed unless ingest.follow_links_outside = true)"
NOT_REGULAR = "not a regular file (socket, FIFO or device)"
NO_SUCH = "no such file or folder"
NOT_A_NAME = "not a usable file name"


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
        return NOT_REGULAR
    return None


def _given_problem(path: Path) -> str | None:
    """Why a path named on the command line cannot be ingested (None when it can): checked without raising,
    whatever the text (a name too long, a NUL byte, characters no file name can hold)."""
    try:
        os.lstat(path)
    except OSError as exc:
        return NO_SUCH if exc.errno == errno.ENOENT else f"unreadable: {exc.strerror}"
    except ValueError:
        return NOT_A_NAME
    return _stat_problem(path)


def not_found(paths: Sequence[Path]) -> list[Path]:
    """The paths named on the command line that name nothing: no such file or folder, or text no file name can
    hold (a typo is a usage error before any collection is made, not an ingest of nothing)."""
    return [given for given in paths if _given_problem(user_path(given)) in (NO_SUCH, NOT_A_NAME)]


def _undecodable(name: str) -> bool:
    """True for a name os.fsdecode could only carry with surrogate escapes (bytes that are not UTF-8)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, links resolved, is `root` or lies under it."""
    target = path.resolve()
    return target == root or root in target.parents


def ignore_spec(root: Path, patterns: Sequence[str]) -> Any:
    """The gitignore-style rules for a folder: `patterns` (ingest.ignore), then its .ragtuiignore lines."""
    import pathspec

    lines = list(patterns)
    with contextlib.suppress(OSError):       # no .ragtuiignore (or unreadable): the configured rules alone
        lines += (root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def discover(paths: Sequence[Path], ignore: Sequence[str] = (), follow_outside: bool = False
             ) -> tuple[list[Entry], list[Skip], list[str], Counter[str]]:
    """(files to ingest, entries skipped with a reason, folder roots that `--sync` may prune, paths
    left out uncounted-by-name: hidden ones and those the ignore rules match)."""
    entries: list[Entry] = []
    skips: list[Skip] = []
    roots: list[str] = []
    ignored: Counter[str] = Counter()
    seen: dict[str, str] = {}
    for given in paths:
        path = user_path(given)
        problem = _given_problem(path)
        if problem:
            skips.append(Skip(str(given), problem))
            continue
        root = path.resolve()
        if root.is_file():
            found = [Entry(path.name, str(root), root)]
        else:
            roots.append(str(root))
            found = _walk(root, skips, ignored, ignore_spec(root, ignore), follow_outside)
        for entry in found:
            if seen.get(entry.source, entry.root) != entry.root:
                skips.append(Skip(f"{entry.root}/{entry.source}",
                                  f"name clash: {entry.source} also comes from {seen[entry.source]}"))
                continue
            if entry.source not in seen:
                seen[entry.source] = entry.root
                entries.append(entry)
    return entries, skips, roots, ignored


def _walk(root: Path, skips: list[Skip], ignored: Counter[str], spec: Any, follow_outside: bool) -> list[Entry]:
    out: list[Entry] = []
    visited = {_identity(root)}
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
            if _undecodable(rel):
                skips.append(Skip(one_line(rel), NOT_UTF8))
                continue
            problem = _stat_problem(path)
            if problem:
                skips.append(Skip(rel, problem))
            elif spec.match_file(rel + "/" if path.is_dir() else rel):
                ignored[IGNORED] += 1
            elif not follow_outside and path.is_symlink() and not inside(path, root):
                skips.append(Skip(rel + "/" if path.is_dir() else rel, LEAVES_ROOT))
            elif path.is_dir():
                identity = _identity(path)
                if identity in visited:
                    skips.append(Skip(rel + "/", "symlink loop (folder already walked)"))
                else:
                    visited.add(identity)
                    subdirs.append(path)
            elif is_bibliography(name):
                ignored[BIBLIOGRAPHY] += 1
            else:
                out.append(Entry(rel, str(root), path))
        stack.extend(reversed(subdirs))
    return sorted(out, key=lambda e: e.source)


def is_bibliography(name: str) -> bool:
    """A BibTeX file by its name (any case: Windows exports write "Library.BIB")."""
    return name.casefold().endswith(".bib")


def _identity(path: Path) -> tuple[int, int]:
    """(device, inode): an inode number alone repeats across filesystems (a mounted one's root is often 2)."""
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


class NotRead(Exception):
    """A discovered file that is not read after all; the message is the skip reason."""


def read_regular(path: Path, max_mb: int) -> bytes:
    """The bytes of a regular file, at most `max_mb` MiB of them, never blocking and never a device.

    Discovery's checks are stale by the time a file is read (it may be deleted, or replaced by a FIFO
    or a link to /dev/zero), so the kind is checked again on the opened descriptor (O_NONBLOCK: opening
    a FIFO does not wait for a writer) and the limit holds for the bytes actually read, not for stat.
    """
    limit = max_mb * 1024 * 1024
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise NotRead("file vanished") from None
    except OSError as exc:
        raise NotRead(f"unreadable: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRead(NOT_REGULAR)
        if st.st_size > limit:
            raise NotRead(_too_large(st.st_size, max_mb))
        parts: list[bytes] = []
        total = 0
        while total <= limit:
            part = os.read(fd, min(1 << 20, limit + 1 - total))
            if not part:
                break
            parts.append(part)
            total += len(part)
        if total > limit:
            raise NotRead(_too_large(total, max_mb))
        return b"".join(parts)
    except OSError as exc:
        raise NotRead(f"unreadable: {exc.strerror}") from None
    finally:
        os.close(fd)


def _too_large(size: int, max_mb: int) -> str:
    return f"too large: {size // (1024 * 1024)} MiB exceeds ingest.max_file_mb ({max_mb})"
