"""A store write that failed because the disk under the data dir is full, told apart from other failures."""

from __future__ import annotations

import shutil
from pathlib import Path

from ragtui.errors import RagtuiError, describe, disk_full

# Below this much free space, a failed store write is taken for a full disk: Chroma's Rust core reports one
# as "Error in compaction: Failed to apply logs to the metadata segment", without the OS error.
LOW_SPACE_BYTES = 64 * 2**20


class DiskFull(RagtuiError):
    """The disk under the data dir filled up mid-ingest. Every store write is journalled in the records
    first, so the collection is left as an interrupted ingest that the next run reconciles and resumes."""

    def __init__(self, data_dir: Path, free: int | None, cause: BaseException) -> None:
        room = "free space unknown" if free is None else f"{free / 2**20:.1f} MiB free"
        super().__init__(f"the disk holding the data dir {data_dir} is full ({room}; the store said: "
                         f"{describe(cause)[:160]}); the ingest stopped",
                         hint="free space there (or set storage.data_dir to a disk with room) and run the same "
                              "ingest again: what is stored is consistent and it resumes where it stopped")


def full_disk(exc: BaseException, data_dir: Path, written: Path) -> DiskFull | None:
    """`exc` as a DiskFull when the disk holding `written` is full (the OS said so, or little room is left);
    None for any other failure."""
    try:
        free: int | None = shutil.disk_usage(written).free
    except OSError:
        free = None
    if disk_full(exc) or (free is not None and free < LOW_SPACE_BYTES):
        return DiskFull(data_dir, free, exc)
    return None
