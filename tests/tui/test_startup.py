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


def test_quitting_while_collections_load_leaves_no_traceback(tmp_path: Path) -> None:
    """The benchmark's child quits right after the first frame, while the collections list is still loading:
    the late list must find nothing to draw into, not raise MountError on the way out."""
    import json
    import subprocess
    import sys

    spec = importlib.util.spec_from_file_location("tui_startup", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    (tmp_path / "collections" / "notes").mkdir(parents=True)
    (tmp_path / "collections" / "notes" / "collection.json").write_text(
        json.dumps({"name": "notes", "topic": "", "uid": "u1", "created": "2026-01-01", "models": [],
                    "state": "empty"}), encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", bench.CHILD, str(tmp_path), json.dumps(bench.HEAVY)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    assert "Error" not in out.stderr + out.stdout and "Traceback" not in out.stderr
