"""`ragtui ingest FOLDER... -c NAME --watch`: keep a collection in step with folders until Ctrl-C.

The folders are watched with `watchfiles` (the Rust `notify` crate: inotify on Linux,
FSEvents on macOS), which groups a burst of file events into one set: it yields once
no new event came for `step` ms, or after `debounce` ms at most
(https://watchfiles.helpmanual.io/api/watch/). Every set runs the same ingest `ragtui
ingest --sync` runs over the same folders (`Workspace.ingest`): unchanged files are
recognised by their hash and kept, changed ones re-indexed, added ones indexed, and
files gone from the folders dropped from the collection; whatever that ingest does
after a change happens here too. The watcher starts before the first ingest, so a
change made during any run is seen and runs the next one.

While it runs the collection's watch lock is held (`Collection.watch_lock`): the TUI's
collections pane marks the collection as watched, and a second watch for it is refused.
Ctrl-C (or SIGTERM) stops the watch; an ingest under way is interrupted as a plain
ingest's Ctrl-C interrupts it (the stores stay consistent, the next run finishes it),
and a summary of the runs is printed.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from contextlib import aclosing, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeAlias

from ragtui.config import Settings
from ragtui.errors import RagtuiError
from ragtui.paths import user_path
from ragtui.sanitize import one_line

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from watchfiles import Change

    from ragtui.events import Event
    from ragtui.model.collection import IngestReport
    from ragtui.workspace import Workspace

Show: TypeAlias = "Callable[[AsyncIterator[Event], TextIO], Awaitable[int]]"   # prints one run's events
DEBOUNCE_MS = 1600      # watchfiles' default: a burst is gathered for at most this long
STEP_MS = 50            # and is over once no event came for this long


@dataclass
class WatchTally:
    """What the watch's ingest runs did, summed for the summary line."""

    runs: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    failed: int = 0
    interrupted: bool = False

    def count(self, report: IngestReport) -> None:
        self.runs += 1
        self.added += len(report.added)
        self.updated += len(report.updated)
        self.removed += len(report.removed)

    def summary(self, collection: str) -> str:
        line = (f"watch: stopped; {self.runs} finished ingest run(s) into {collection!r}: {self.added} file(s) "
                f"added, {self.updated} changed, {self.removed} removed")
        if self.failed:
            line += f"; {self.failed} run(s) failed"
        if self.interrupted:
            line += ("; the run under way was interrupted (the stores are consistent: the next ingest or watch "
                     "finishes it)")
        return line


def refuse_files(paths: list[Path]) -> None:
    """A watch keeps a collection in step with folders: a PATH that is not one is a usage error."""
    files = [p for p in paths if not user_path(p).is_dir()]
    if files:
        raise RagtuiError(f"--watch keeps a collection in step with folders; not a folder: "
                          f"{', '.join(one_line(str(p)) for p in files)}", exit_code=2)


async def watch(paths: list[Path], collection: str, topic: str, settings: Settings, out: TextIO, show: Show) -> int:
    """Ingest, then ingest again after each set of changes, until SIGINT or SIGTERM; 0 once stopped. Each run's
    events are printed by `show` (`ingest_cmd.show_ingest`, as a plain ingest prints them)."""
    from ragtui.workspace import Workspace

    refuse_files(paths)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    tally = WatchTally()
    try:
        async with Workspace(settings) as workspace:
            with workspace.watching(collection, topic):
                changes: asyncio.Queue[int] = asyncio.Queue()
                watcher = asyncio.ensure_future(_watch_folders(paths, settings.data_dir, stop, changes))
                watcher.add_done_callback(lambda _: stop.set())     # a watcher that fails ends the watch
                try:
                    await _loop(Run(workspace, paths, collection, tally, out, show), topic, stop, changes)
                finally:
                    stop.set()
                    watcher.cancel()
                    print(tally.summary(collection), file=out, flush=True)
                    await _ended(watcher)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return 0


async def _ended(watcher: asyncio.Future[None]) -> None:
    """The folder watcher awaited once cancelled; its failure, if it failed, is the command's (one line)."""
    from ragtui.errors import describe

    try:
        await watcher
    except asyncio.CancelledError:
        pass
    except Exception as exc:  # the OS refused to watch (a folder gone, too many watches): the watch cannot go on
        raise RagtuiError(f"watching the folders failed: {one_line(describe(exc))}") from exc


async def _watch_folders(paths: list[Path], data_dir: Path, stop: asyncio.Event, changes: asyncio.Queue[int]) -> None:
    """Put the size of each debounced set of changes under `paths` on `changes` (ragtui's own data dir left out,
    should it lie inside a watched folder: the ingest's own writes would start the next run)."""
    from watchfiles import DefaultFilter, awatch

    own = data_dir.resolve()
    default = DefaultFilter()

    def wanted(change: Change, path: str) -> bool:
        return default(change, path) and not Path(path).resolve().is_relative_to(own)

    async for batch in awatch(*paths, watch_filter=wanted, debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=stop):
        changes.put_nowait(len(batch))


@dataclass
class Run:
    """What each ingest run of the watch needs."""

    workspace: Workspace
    paths: list[Path]
    collection: str
    tally: WatchTally
    out: TextIO
    show: Show

    async def once(self, topic: str) -> None:
        """One ingest with --sync over the watched folders, shown as `ragtui ingest` shows it; a failed run is one
        line and the watch goes on (the next change tries again)."""
        from ragtui.errors import describe

        try:
            async with aclosing(self.workspace.ingest(self.paths, self.collection, topic=topic, sync=True)) as events:
                await self.show(_counted(events, self.tally), self.out)
        except Exception as exc:  # a busy collection, an unreachable vector server: this run only
            self.tally.failed += 1
            print(f"watch: this ingest failed: {one_line(describe(exc))}; the next change tries again",
                  file=sys.stderr, flush=True)


async def _loop(run: Run, topic: str, stop: asyncio.Event, changes: asyncio.Queue[int]) -> None:
    first = True
    while not stop.is_set():
        if not first:
            seen = await _next_changes(changes, stop)
            if seen is None:
                return
            if gone := [p for p in run.paths if not user_path(p).is_dir()]:
                raise RagtuiError(f"watched folder gone: {', '.join(one_line(str(p)) for p in gone)}; the watch "
                                  "stops (the collection keeps its files: `ingest --sync` drops them)")
            print(f"watch: {seen} change(s) in the watched folders; ingesting", file=run.out, flush=True)
        task = asyncio.ensure_future(run.once(topic if first else ""))
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not task.done():
            task.cancel()
            run.tally.interrupted = True
            with suppress(asyncio.CancelledError):
                await task
            return
        task.result()
        if first:
            print(f"watch: watching {', '.join(one_line(str(p)) for p in run.paths)} for collection "
                  f"{run.collection!r}; Ctrl-C stops", file=run.out, flush=True)
        first = False


async def _next_changes(changes: asyncio.Queue[int], stop: asyncio.Event) -> int | None:
    """The number of changes in the sets waiting (at least one set, waited for), or None once stopped."""
    getting = asyncio.ensure_future(changes.get())
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({getting, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if not getting.done():
        getting.cancel()
        return None
    seen = getting.result()
    while not changes.empty():
        seen += changes.get_nowait()
    return seen


async def _counted(events: AsyncIterator[Event], tally: WatchTally) -> AsyncIterator[Event]:
    from ragtui.events import IngestFinished

    async for event in events:
        if isinstance(event, IngestFinished):
            tally.count(event.report)
        yield event
