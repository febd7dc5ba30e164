"""A full disk found mid-ingest, and the stores failing again as the workspace closes them (Chroma flushes on
close and says "database or disk is full"): that second error had replaced the DiskFull on its way out, so
the user saw a 90-line double traceback around the one clear line. The stores are real; only their writes
are made to fail the way a full disk fails them (tests/ingest/test_full_disk.py fills a real tmpfs)."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.ingest.disk_full import DiskFull
from ragtui.library import Collection
from ragtui.stores.keyword import KeywordIndex
from tests.ingest.conftest import ingest


def test_a_store_failing_again_on_close_does_not_hide_the_full_disk(settings: Settings, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from chromadb.errors import InternalError

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "manual.txt").write_text("Prime the pump before starting the motor. " * 40)
    full = False
    real_close = Collection.close

    def replace(self: KeywordIndex, sources: Any, chunks: Any, tokens: Any = None) -> int:
        nonlocal full
        full = True
        raise OSError(errno.ENOSPC, "No space left on device")

    def close(self: Collection) -> None:
        real_close(self)
        if full:
            raise InternalError("Error in compaction: database or disk is full")

    monkeypatch.setattr(KeywordIndex, "replace_sources", replace)
    monkeypatch.setattr(Collection, "close", close)
    with pytest.raises(DiskFull) as caught:
        ingest(settings, [folder], "c")
    assert "is full" in str(caught.value) and "No space left on device" in str(caught.value)
