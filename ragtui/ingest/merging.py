"""A large ingest's closing keyword merge, in a process of its own.

The merge (`KeywordIndex.merge`: segments folded together, then each new
segment's postings file written) is pure Python and, at the end of a large
ingest, runs for minutes while the embedding pass may still go on. In the
ingesting process it shares Python's lock with that pass and, in the TUI,
with the event loop; in a process of its own it takes the other core (at
100k chunks: the merge 113 s against 128 s, the build 300 s against 335 s,
one run each, docs/benchmarks.md).

No batch is committed once the reading ends, so nothing waits for the Whoosh
write lock the merge holds; readers in every process see the merged index at
their next search, as they see another process's ingest.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path

from ragtui.spawning import spawn_context, start_as_child_of


class MergeProcessGone(RuntimeError):
    """The merge's process ended without an answer (killed, or out of memory)."""


def merge_apart(folders: Sequence[Path]) -> list[int]:
    """`KeywordIndex(folder).merge()` of each folder, in order, in a spawned process; the segments each has
    left. The process's exception is raised here; MergeProcessGone when it ended without an answer."""
    context = spawn_context()
    mine, theirs = context.Pipe(duplex=False)
    process = context.Process(target=_merge, args=(theirs, [str(f) for f in folders], os.getpid()),
                              name="ragtui-merge", daemon=True)
    process.start()
    theirs.close()
    try:
        status, value = mine.recv()
    except (EOFError, OSError) as exc:
        process.join(timeout=5.0)
        raise MergeProcessGone(f"the keyword merge's process ended (exit code {process.exitcode})") from exc
    finally:
        mine.close()
        process.join(timeout=30.0)
        if process.is_alive():
            process.kill()
    if status == "error":
        raise value
    return list(value)


def _merge(conn: Connection, folders: list[str], parent: int) -> None:
    start_as_child_of(parent)
    from ragtui.stores.keyword import KeywordIndex

    try:
        left = []
        for folder in folders:
            index = KeywordIndex(Path(folder))
            try:
                left.append(index.merge())
            finally:
                index.close()
        answer: tuple[str, object] = ("ok", left)
    except Exception as exc:
        answer = ("error", exc)
    try:
        conn.send(answer)
    except Exception:
        conn.send(("error", RuntimeError(f"the keyword merge failed: {answer[1]}"[:2000])))
    conn.close()
