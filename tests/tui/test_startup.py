"""The first frame never waits for the engine: no heavy module is imported when the app is ready."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "tui_startup.py"


def test_no_heavy_import_before_first_frame() -> None:
    spec = importlib.util.spec_from_file_location("tui_startup", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    _, heavy = bench.one_run()
    assert heavy == []
