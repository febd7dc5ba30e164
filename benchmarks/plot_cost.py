"""What `--plot` costs: `ragtui collections info NAME --plot` against the same command without it (the yardstick),
each a fresh process as a user runs it, interleaved, on one collection; and plotext's own import time.

    python -m benchmarks.plot_cost [--runs 7] [--files 200]

The collection is built by `ragtui ingest` from `--files` one-chunk text files of varied entropy, its embeddings
served by the tests' fake Ollama on loopback. Each run is timed from the process's start to its exit: wall time and
the child's user + system CPU. plotext's import is read from `python -X importtime -c "import plotext"` (its
cumulative microseconds), with `import rich` (which every ragtui command loads) as the yardstick in the same run.
Prints a Markdown table and one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def build(folder: Path, data: Path, files: int, ollama: str) -> list[str]:
    """The collection `plots` of `files` files; the argv prefix every timed command shares."""
    docs = folder / "docs"
    docs.mkdir()
    for i in range(files):
        letters = LETTERS[:4 + i % 20]          # 2.3 to 4.8 bits per byte
        words = [letters[j % len(letters):] + letters[:j % len(letters)] for j in range(i, i + 40)]
        (docs / f"f{i}.txt").write_text(" ".join(words), encoding="utf-8")
    prefix = [sys.executable, "-m", "ragtui", "--data-dir", str(data), "--ollama-host", ollama,
              "--set", "synonyms.enabled=false"]
    subprocess.run([*prefix, "ingest", str(docs), "-c", "plots"], check=True, capture_output=True, cwd=ROOT,
                   env=_env(folder))
    return prefix


def _env(folder: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(folder / "home"), "COLUMNS": "80", "PYTHONPATH": str(ROOT)}


def timed(argv: list[str], folder: Path) -> dict[str, float]:
    with tempfile.TemporaryFile("w+") as out:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT, env=_env(folder))
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv[3:])} failed")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime}


def import_us(module: str) -> int:
    """The cumulative import time of `module` in a fresh interpreter, in microseconds."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                          text=True, check=True)
    last = [line for line in done.stderr.splitlines() if line.rstrip().endswith(f"| {module}")][-1]
    return int(last.split("|")[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.fake_ollama import FakeOllama

    fake = FakeOllama().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            prefix = build(folder, folder / "data", args.files, fake.url)
            runs: dict[str, list[dict[str, float]]] = {"table": [], "plot": []}
            imports: dict[str, list[int]] = {"plotext": [], "rich": []}
            for _ in range(args.runs):
                runs["table"].append(timed([*prefix, "collections", "info", "plots"], folder))
                runs["plot"].append(timed([*prefix, "collections", "info", "plots", "--plot"], folder))
                for module in imports:
                    imports[module].append(import_us(module))
    finally:
        fake.stop()
    result: dict[str, Any] = {
        kind: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s")} for kind, rs in runs.items()}
    result["ratio_wall"] = result["plot"]["wall_s"] / result["table"]["wall_s"]
    result["ratio_cpu"] = result["plot"]["cpu_s"] / result["table"]["cpu_s"]
    result["import_ms"] = {m: statistics.median(v) / 1000 for m, v in imports.items()}
    result.update(runs=args.runs, files=args.files)
    print("| command | wall s (median) | CPU s (median) |\n|---|---|---|")
    for kind, label in (("table", "collections info"), ("plot", "collections info --plot")):
        print(f"| {label} | {result[kind]['wall_s']:.3f} | {result[kind]['cpu_s']:.3f} |")
    print(f"\n--plot / without: wall {result['ratio_wall']:.2f}x, CPU {result['ratio_cpu']:.2f}x; import plotext "
          f"{result['import_ms']['plotext']:.1f} ms, import rich {result['import_ms']['rich']:.1f} ms (medians of "
          f"{args.runs})")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
