"""Cold start to first frame of the TUI, in fresh interpreters (spec 13: under 1 s).

Each run starts `python -c CHILD` and measures, from just before the process is
spawned, until the app's first frame has been composed and painted (headless
driver, 80x24). The child also reports which heavy engine modules were already
imported at that moment: there must be none.

    python benchmarks/tui_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

HEAVY = ("llama_index.core", "chromadb", "whoosh", "wn", "pymupdf")

CHILD = r"""
import json, sys, time
from pathlib import Path
from ragtui.config import load_settings
from ragtui.tui.app import RagtuiApp

data, HEAVY = sys.argv[1], json.loads(sys.argv[2])
settings = load_settings(user_file=Path(data) / "none.toml", env={},
                         overrides=[f"storage.data_dir={data}", "ollama.host=http://127.0.0.1:9"])

async def first_frame(pilot):
    import asyncio
    loaded = [m for m in HEAVY if m in sys.modules]   # the app is ready: composed and mounted
    painted = asyncio.get_running_loop().create_future()
    pilot.app.call_after_refresh(lambda: painted.set_result(time.time()))   # the next refresh paints it
    print(json.dumps({"at": await painted, "heavy": loaded}), flush=True)
    pilot.app.exit()

RagtuiApp(settings, start_workers=True).run(headless=True, size=(80, 24), auto_pilot=first_frame)
"""


def one_run() -> tuple[float, list[str]]:
    with tempfile.TemporaryDirectory() as data:
        start = time.time()
        out = subprocess.run([sys.executable, "-c", CHILD, data, json.dumps(HEAVY)], capture_output=True, text=True,
                             check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    return report["at"] - start, report["heavy"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    one_run()  # warm the OS file cache: "cold" here means a fresh interpreter, not a cold disk
    times, heavy = [], set()
    for _ in range(args.runs):
        seconds, loaded = one_run()
        times.append(seconds)
        heavy.update(loaded)
    print(f"TUI first frame, {args.runs} fresh interpreters: median {statistics.median(times):.3f} s, "
          f"min {min(times):.3f} s, max {max(times):.3f} s")
    print("heavy modules imported before the first frame: " + (", ".join(sorted(heavy)) or "none"))
    return 0 if statistics.median(times) < 1.0 and not heavy else 1


if __name__ == "__main__":
    raise SystemExit(main())
