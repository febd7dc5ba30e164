"""A large ingest's closing keyword merge, in a process of its own.

The merge (`KeywordIndex.merge`: segments folded together, then each new
segment's postings file written) is pure Python and, at the end of a large
ingest, runs for minutes while the embedding pass may still go on. In the
ingesting process it shares Python's lock with that pass and, in the TUI,
with the event loop; in a process of its own it takes the other core (at
100k chunks: the merge 113 s against 128 s, the build 300 s against 335 s,
one run each, docs/benchmarks.md).

A merge large enough is cut in groups (`stores/keyword_merge.py`), one
process each, all at once, up to one per core (at most `MERGE_PROCESSES`): the
closing merge of a million chunks is two merges of half a million, on two
cores. The first process holds the write lock meanwhile and commits the groups'
segments in one commit.

No batch is committed once the reading ends, so nothing waits for the Whoosh
write lock the merge holds; readers in every process see the merged index at
their next search, as they see another process's ingest.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

from ragtui.spawning import spawn_context, start_as_child_of
from ragtui.stores.keyword_merge import SETTLED_DOCS

MERGE_PROCESSES = 4   # each group becomes a segment that queries read apart: more cores, more segments at 1M+


class MergeProcessGone(RuntimeError):
    """The merge's process ended without an answer (killed, or out of memory)."""


def merge_apart(folders: Sequence[Path], parts: int | None = None, settled: int = SETTLED_DOCS) -> list[int]:
    """`KeywordIndex(folder).merge()` of each folder, in order, in a spawned process, a merge cut in up to `parts`
    groups (default: one per core, at most MERGE_PROCESSES) in processes of their own; the segments each has left.
    `settled`: the segment size a merge leaves alone (keyword_merge.SETTLED_DOCS). The process's exception is
    raised here; MergeProcessGone when it, or a group's process, ended without an answer."""
    if parts is None:
        parts = min(MERGE_PROCESSES, len(os.sched_getaffinity(0)))
    # Not a daemon: multiprocessing lets no daemon start processes, and this one starts the groups' (it dies with
    # this process all the same: start_as_child_of).
    left = _result(*_start(_merge, [str(f) for f in folders], parts, settled, name="ragtui-merge", daemon=False),
                   "the keyword merge's process")
    assert isinstance(left, list)
    return left


def _merge(folders: list[str], parts: int, settled: int) -> list[int]:
    from ragtui.stores.keyword import KeywordIndex

    left = []
    for folder in folders:
        index = KeywordIndex(Path(folder))
        try:
            left.append(index.merge(parts, build=partial(merge_groups, folder), settled=settled))
        finally:
            index.close()
    return left


def merge_groups(folder: str, groups: list[tuple[list[str], Path]]) -> None:
    """Each group of segments of the index in `folder` merged into its folder (`KeywordIndex.merge_into`) by a
    process of its own, all at once; the first failure is raised once all have ended."""
    running = [_start(_merge_group, folder, segments, str(out), name="ragtui-merge-group", daemon=True)
               for segments, out in groups]
    failure: BaseException | None = None
    for process, conn in running:
        try:
            _result(process, conn, "a keyword merge group's process")
        except BaseException as exc:
            failure = failure or exc
    if failure is not None:
        raise failure


def _merge_group(folder: str, segments: list[str], out: str) -> None:
    from ragtui.stores.keyword import KeywordIndex

    index = KeywordIndex(Path(folder))
    try:
        index.merge_into(segments, Path(out))
    finally:
        index.close()


def _start(work: Callable[..., object], *args: object, name: str, daemon: bool) -> tuple[BaseProcess, Connection]:
    """`work(*args)` started in a spawned child of this process, its answer coming back on the connection."""
    context = spawn_context()
    mine, theirs = context.Pipe(duplex=False)
    process = context.Process(target=_run, args=(theirs, os.getpid(), work, args), name=name, daemon=daemon)
    process.start()
    theirs.close()
    return process, mine


def _result(process: BaseProcess, conn: Connection, what: str) -> object:
    """What the child returned (its exception raised here); MergeProcessGone when it ended without an answer."""
    try:
        status, value = conn.recv()
    except (EOFError, OSError) as exc:
        process.join(timeout=5.0)
        raise MergeProcessGone(f"{what} ended (exit code {process.exitcode})") from exc
    finally:
        conn.close()
        process.join(timeout=30.0)
        if process.is_alive():
            process.kill()
    if status == "error":
        raise value
    return value


def _run(conn: Connection, parent: int, work: Callable[..., object], args: tuple) -> None:
    start_as_child_of(parent)
    try:
        answer: tuple[str, object] = ("ok", work(*args))
    except Exception as exc:
        answer = ("error", exc)
    try:
        conn.send(answer)
    except Exception:
        conn.send(("error", RuntimeError(f"the keyword merge failed: {answer[1]}"[:2000])))
    conn.close()
