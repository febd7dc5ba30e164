"""One odd file never stops an ingest: undecodable names, vanishing files, FIFOs and device links,
links leaving the ingested folder. Each is skipped with a reason; the rest of the folder is ingested."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.ingest import discover as discover_mod
from ragtui.ingest.discover import discover
from ragtui.library import CollectionRegistry
from tests.ingest.conftest import SMALL, ingest

PROSE = "The float valve refills the tank after each flush of the toilet. " * 6


def sources(settings: Settings, name: str = "c") -> set[str]:
    coll = CollectionRegistry(settings).open(name)
    try:
        return coll.keyword.sources()
    finally:
        coll.close()


def test_a_name_with_invalid_utf8_is_skipped_on_every_run(settings: Settings, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.txt").write_text(PROSE)
    bad = os.path.join(os.fsencode(root), b"caf\xe9-\x1b]0;title\x07.txt")
    with open(bad, "wb") as f:
        f.write(PROSE.replace("valve", "flapper").encode())
    for _ in range(2):                                       # the re-run must not abort either
        report = ingest(settings, [root])
        skipped = dict(report.skipped)
        [(name, reason)] = skipped.items()
        assert reason.startswith("file name is not valid UTF-8")
        assert "\x1b" not in name and "\x07" not in name and "\\xe9" in name
        assert sources(settings) == {"good.txt"}


def test_a_file_deleted_after_discovery_is_skipped(settings: Settings, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.txt").write_text(PROSE)
    (root / "gone.txt").write_text(PROSE.replace("valve", "flapper"))
    real = discover_mod.discover

    def discover_then_delete(*args, **kw):  # type: ignore[no-untyped-def]
        found = real(*args, **kw)
        (root / "gone.txt").unlink()
        return found

    monkeypatch.setattr("ragtui.ingest.pipeline.discover", discover_then_delete)
    report = ingest(settings, [root])
    assert dict(report.skipped) == {"gone.txt": "file vanished"}
    assert report.added == ["good.txt"]


def test_a_file_replaced_by_a_fifo_is_never_read(settings: Settings, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.txt").write_text(PROSE)
    (root / "swap.txt").write_text(PROSE)
    real = discover_mod.discover

    def discover_then_swap(*args, **kw):  # type: ignore[no-untyped-def]
        found = real(*args, **kw)
        (root / "swap.txt").unlink()
        os.mkfifo(root / "swap.txt")
        return found

    monkeypatch.setattr("ragtui.ingest.pipeline.discover", discover_then_swap)
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(ingest(settings, [root])), daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():                                     # unblock the hung open() so the test ends
        with open(root / "swap.txt", "wb"):
            pass
        worker.join(10)
        pytest.fail("the ingest blocked on a FIFO")
    report = done[0]
    assert dict(report.skipped)["swap.txt"].startswith("not a regular file")  # type: ignore[attr-defined]
    assert report.added == ["good.txt"]  # type: ignore[attr-defined]


def test_a_file_replaced_by_a_link_to_the_zero_device_is_never_read(
        make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # following outside links, so that the read guard itself is what refuses the device
    settings = make_settings(*SMALL, "ingest.max_file_mb=1", "ingest.follow_links_outside=true")
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.txt").write_text(PROSE)
    (root / "zero.txt").write_text(PROSE)
    real = discover_mod.discover

    def discover_then_swap(*args, **kw):  # type: ignore[no-untyped-def]
        found = real(*args, **kw)
        (root / "zero.txt").unlink()
        (root / "zero.txt").symlink_to("/dev/zero")
        return found

    monkeypatch.setattr("ragtui.ingest.pipeline.discover", discover_then_swap)
    report = ingest(settings, [root])
    assert dict(report.skipped)["zero.txt"].startswith("not a regular file")
    assert report.added == ["good.txt"]


def test_a_file_that_grows_past_the_limit_after_stat_is_cut_off(make_settings: Callable[..., Settings],
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_settings(*SMALL, "ingest.max_file_mb=1")
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.txt").write_text(PROSE)
    (root / "grows.txt").write_text("small")
    real = discover_mod.discover

    def discover_then_grow(*args, **kw):  # type: ignore[no-untyped-def]
        found = real(*args, **kw)
        (root / "grows.txt").write_text("word " * 300_000)
        return found

    monkeypatch.setattr("ragtui.ingest.pipeline.discover", discover_then_grow)
    report = ingest(settings, [root])
    assert dict(report.skipped)["grows.txt"].startswith("too large")


def test_links_leaving_the_root_are_not_followed_by_default(make_settings: Callable[..., Settings],
                                                             tmp_path: Path) -> None:
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "secret.txt").write_text(PROSE.replace("valve", "password"))
    root = tmp_path / "docs"
    (root / "inner").mkdir(parents=True)
    (root / "good.txt").write_text(PROSE)
    (root / "inner" / "in.txt").write_text(PROSE.replace("valve", "chain"))
    (root / "secret.txt").symlink_to(outside / "secret.txt")
    (root / "private").symlink_to(outside)
    (root / "passwd").symlink_to("/etc/passwd")
    (root / "inlink.txt").symlink_to(root / "inner" / "in.txt")    # inside the root: followed
    settings = make_settings(*SMALL)
    report = ingest(settings, [root])
    skipped = dict(report.skipped)
    for name in ("secret.txt", "private/", "passwd"):
        assert skipped[name].startswith("link leaves the ingested folder"), skipped
        assert "ingest.follow_links_outside" in skipped[name]
    assert set(skipped) == {"secret.txt", "private/", "passwd"}
    assert report.duplicates == [("inner/in.txt", "inlink.txt")]        # the inside link was read
    assert sources(settings) == {"good.txt", "inlink.txt"}
    allowed = make_settings(*SMALL, "ingest.follow_links_outside=true")
    followed = ingest(allowed, [root], name="d")
    assert followed.skipped == []
    assert ("secret.txt", "private/secret.txt") in followed.duplicates     # same bytes, indexed once
    assert {"private/secret.txt", "passwd"} <= sources(allowed, "d")


def test_loop_detection_keys_on_device_and_inode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two folders with the same inode number on different devices (a second filesystem) are both walked."""
    root = tmp_path / "docs"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "a" / "x.txt").write_text(PROSE)
    (root / "b" / "y.txt").write_text(PROSE)
    real_stat = os.stat
    ino_a = real_stat(root / "a").st_ino

    def fake_stat(path, *args, **kw):  # type: ignore[no-untyped-def]
        st = real_stat(path, *args, **kw)
        if Path(os.fsdecode(path)).name == "b" and Path(os.fsdecode(path)).parent == root:
            fields = list(st)
            fields[1], fields[2] = ino_a, st.st_dev + 1          # st_ino, st_dev
            return os.stat_result(fields)
        return st

    monkeypatch.setattr(discover_mod.os, "stat", fake_stat)
    entries, skips, _, _ = discover([root])
    assert {e.source for e in entries} == {"a/x.txt", "b/y.txt"}
    assert skips == []
