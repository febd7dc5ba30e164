"""Every SVG under tests/tui/__snapshots__ belongs to a test that still exists. syrupy fails a run that leaves a
snapshot unused only when the suite runs in one process; on pytest-xdist workers (`make test`) it skips that
check, and this test keeps the part of it that matters: a renamed or deleted test leaves no stale picture."""

from __future__ import annotations

import ast
import re
from pathlib import Path

HERE = Path(__file__).parent


def functions_of(module: Path) -> set[str]:
    if not module.is_file():
        return set()
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_snapshot_belongs_to_a_test_of_its_module() -> None:
    orphans = []
    for folder in sorted(path for path in (HERE / "__snapshots__").iterdir() if path.is_dir()):
        tests = functions_of(HERE / f"{folder.name}.py")
        for svg in sorted(folder.iterdir()):
            name = re.match(r"[^\[.]+", svg.name)      # test_name[param].svg, test_name.1.svg
            if name is None or name.group() not in tests:
                orphans.append(f"{folder.name}/{svg.name}")
    assert not orphans, f"snapshots of no test: {orphans}"
