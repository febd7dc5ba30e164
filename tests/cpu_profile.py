"""Where the suite's CPU goes, per test: an opt-in pytest plugin, and a summary per test file.

    TESTS_CPU_PROFILE=/tmp/cpu.jsonl python -m pytest -p tests.cpu_profile [-n N] ...
    python -m tests.cpu_profile /tmp/cpu.jsonl [SLOWEST]

One JSON line per test (every pytest-xdist worker appends to the same file): its wall seconds, the CPU
seconds (user and system) of the test process, of the processes it started and waited for, and of those the
warm CLI interpreter ran for it (tests/cli_run.py), and how many processes it started, fresh and warm. A
process still running when the test ends (a session's server) is counted by none of them.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import WARM_RUNS

_fresh_starts = [0]
_popen_init = subprocess.Popen.__init__


def _counting_init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
    _fresh_starts[0] += 1
    _popen_init(self, *args, **kwargs)


def _snapshot() -> dict[str, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall_s": time.monotonic(), "self_s": own.ru_utime + own.ru_stime,
            "children_s": children.ru_utime + children.ru_stime, "warm_s": WARM_RUNS["cpu_s"],
            "fresh": _fresh_starts[0], "warm": WARM_RUNS["processes"]}


def pytest_configure(config: pytest.Config) -> None:
    subprocess.Popen.__init__ = _counting_init  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    before = _snapshot()
    yield
    after = _snapshot()
    record = {"test": item.nodeid, **{key: round(after[key] - before[key], 3) for key in before}}
    with open(os.environ.get("TESTS_CPU_PROFILE", "cpu-profile.jsonl"), "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def summary(path: Path, slowest: int = 0) -> str:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    cpu = {r["test"]: r["self_s"] + r["children_s"] + r["warm_s"] for r in records}
    files: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in records:
        row = files[r["test"].split("::")[0]]
        row["tests"] += 1
        row["cpu_s"] += cpu[r["test"]]
        for key in ("wall_s", "fresh", "warm"):
            row[key] += r[key]
    lines = [f"{'file':60} {'tests':>5} {'cpu s':>8} {'wall s':>8} {'fresh':>6} {'warm':>6}"]
    for name, row in sorted(files.items(), key=lambda kv: -kv[1]["cpu_s"]):
        lines.append(f"{name:60} {row['tests']:5.0f} {row['cpu_s']:8.1f} {row['wall_s']:8.1f} {row['fresh']:6.0f} "
                     f"{row['warm']:6.0f}")
    lines.append(f"{'all':60} {len(records):5} {sum(cpu.values()):8.1f}")
    lines += [f"{cpu[test]:8.1f}  {test}" for test in sorted(cpu, key=lambda t: -cpu[t])[:slowest]]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0))
