"""Extraction in a worker process (`ingest.workers`) gives the same collection and report as in the ingest's own."""

from __future__ import annotations

import os
import resource
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.ingest import extraction
from ragtui.ingest.extraction import POOL_MIN_FILES, processes_for
from ragtui.library import CollectionRegistry
from tests.fake_ollama import FakeOllama
from tests.ingest import corpus
from tests.ingest.conftest import SMALL, ingest

PROSE = ("The float valve refills the tank after each flush. A worn flapper lets water leak into the bowl. "
         "Plumbers replace the flapper chain when it rusts. ")


FILES = 16


def _folder(root: Path) -> Path:
    """Prose, markdown, a zip, a copy, a damaged PDF, binary junk: more files than the pool's threshold (lowered to
    FILES here)."""
    root.mkdir(parents=True)
    for i in range(FILES):
        (root / f"note{i:02d}.txt").write_text(f"Note {i}. " + PROSE * (3 + i % 4))
    (root / "guide.md").write_text("# Valves\n\n" + PROSE * 4 + "\n## Chains\n\n" + PROSE * 3)
    (root / "copy.txt").write_bytes((root / "note00.txt").read_bytes())
    (root / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj <<>> garbage \x00\xff" * 20)
    (root / "junk.txt").write_bytes(os.urandom(20_000).replace(b"\x00", b"\x01"))
    corpus.pdf(root / "manual.pdf", [PROSE, "Second page about the chain. " + PROSE])
    with zipfile.ZipFile(root / "bundle.zip", "w") as z:
        z.writestr("inner/a.txt", "Inside the bundle. " + PROSE * 2)
        z.writestr("inner/b.bin", os.urandom(300))
    return root


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _collection(settings: Settings) -> dict[str, object]:
    coll = CollectionRegistry(settings).open("c")
    try:
        ids = sorted(coll.keyword.ids())
        files = sorted((r.source, r.status, r.reason, r.hash, r.chunks, r.filtered, r.container)
                       for r in coll.records.files())
        return {"files": files, "chunks": [(c.id, c.text, c.meta.to_dict()) for c in coll.keyword.get(ids)],
                "terms": {t: coll.keyword.analyze(t) for t in ("valves", "flapper", "plumbers")}}
    finally:
        coll.close()


def test_a_worker_process_gives_what_the_ingest_itself_gives(tmp_path: Path, fake_ollama: FakeOllama,
                                                             make_settings: Callable[..., Settings],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extraction, "POOL_MIN_FILES", FILES)
    folder = _folder(tmp_path / "docs")
    seen = {}
    for workers in (1, 0):
        settings = make_settings(*SMALL, f"ingest.workers={workers}",
                                 f"storage.data_dir={tmp_path / f'data{workers}'}")
        before = _children_cpu()
        report = ingest(settings, [folder])
        assert not report.interrupted and not report.warnings
        if workers:         # the worker ran, and was waited for: its imports alone take a few tenths of a second
            assert _children_cpu() - before > 0.2
        seen[workers] = (sorted(report.added), sorted(report.skipped), sorted(report.duplicates),
                         dict(report.filtered), report.mostly_filtered, report.chunks_indexed,
                         report.chunks_embedded, _collection(settings))
        again = ingest(settings, [folder])       # resumable and incremental: nothing left to do
        assert again.unchanged == len(report.added) + len(report.duplicates) and not again.added
    pooled, local = seen[1], seen[0]
    assert pooled == local
    added, skipped, duplicates = pooled[:3]
    assert "broken.pdf" in {s for s, _ in skipped} and "bundle.zip/inner/b.bin" in {s for s, _ in skipped}
    assert duplicates == [("note00.txt", "copy.txt")]
    assert "bundle.zip" in added and "manual.pdf" in added
    assert pooled[5] == pooled[6] == len(pooled[7]["chunks"]) > FILES   # type: ignore[arg-type]


def test_a_few_files_are_extracted_in_the_ingest_itself(settings: Settings) -> None:
    assert settings.ingest.workers == 1          # one worker by default, for an ingest of 100 files or more
    assert processes_for(settings, 20) == 0
    assert processes_for(settings, POOL_MIN_FILES) == 1
    assert processes_for(settings.replace(ingest__workers=0), POOL_MIN_FILES) == 0
