"""A `ragtui query` process from its start to its printed answer, on a collection keyword_scale or ingest_scale built.

    python -m benchmarks.query_cli --data-dir DIR --collection NAME [--runs 5] [--eval-data DIR]
                                   [--chroma HOST:PORT]

The path a user runs: `python -m ragtui query TEXT -c NAME --json` in a fresh
process, its query embedded over HTTP by a stand-in Ollama on loopback (the
fake server of the tests, answering `hash-384` with the builds' own hashed
vectors, so the vector leg finds what it would). Each run asks a different
natural question (SQuAD, then Cranfield) and is timed from the process's
start to its exit (and to the first byte of its answer): wall time, the child's user and system CPU, and its peak
RSS. A run whose answer holds no chunk, or that says it searched keywords only,
is an error: the figure must be of both legs. With --chroma the vectors are
read from that Chroma server. Prints a Markdown table and one JSON object.
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

from benchmarks.keyword_scale import DIM, ROOT, collection_arguments, hashed, overrides_for, questions


def stand_in_ollama() -> Any:
    """The tests' fake Ollama with a `hash-384` embedding model that answers with keyword_scale's vectors."""
    from tests.fake_ollama import FakeOllama, Model

    fake = FakeOllama()
    fake.add_model(Model("hash-384", "embed", dim=DIM))
    fake.embed_body = lambda texts, dim: json.dumps(
        {"model": "hash-384", "embeddings": [hashed(t.lower()) for t in texts]}).encode()
    return fake.start()


def one_query(data_dir: Path, name: str, question: str, ollama: str, chroma: str | None) -> dict[str, Any]:
    settings = overrides_for(data_dir, ollama=ollama, chroma=chroma)
    argv = [sys.executable, "-m", "ragtui", *(a for s in settings for a in ("--set", s)),
            "query", question, "-c", name, "--json"]
    with tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT,
                                 env={**os.environ, "XDG_CONFIG_HOME": str(data_dir / "no-config")})
        assert child.stdout is not None
        first = child.stdout.read(1)                     # the answer starts: what the user sees
        printed = time.perf_counter() - started
        stdout = first + child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)        # this child's own CPU and peak RSS
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read()
    if child.returncode != 0:
        raise RuntimeError(f"ragtui query exited {child.returncode}: {stderr[-2000:]}")
    answer = json.loads(stdout)
    legs = {leg for node in answer["nodes"] for leg in node["legs"]}
    if not {"vector", "keyword"} <= legs or answer["keyword_only"]:
        raise RuntimeError(f"not an answer from both legs: {stdout[:2000]}")
    return {"question": question, "printed_s": round(printed, 3), "wall_s": round(wall, 3),
            "user_s": round(usage.ru_utime, 3), "sys_s": round(usage.ru_stime, 3),
            "peak_rss_mib": round(usage.ru_maxrss / 1024), "chunks": len(answer["nodes"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    collection_arguments(parser)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    fake = stand_in_ollama()
    try:
        runs = [one_query(args.data_dir, args.collection, q, fake.url, args.chroma)
                for q in questions(args.eval_data, args.runs)]
    finally:
        fake.stop()
    rows = ["| run | answer printed s | exit s | user s | sys s | peak RSS MiB |", "|---|---|---|---|---|---|"]
    rows += [f"| {i} | {r['printed_s']:.2f} | {r['wall_s']:.2f} | {r['user_s']:.2f} | {r['sys_s']:.2f} | "
             f"{r['peak_rss_mib']} |" for i, r in enumerate(runs, 1)]
    print("\n".join(rows))
    print(f"median: answer printed {statistics.median(r['printed_s'] for r in runs):.2f} s, "
          f"exit {statistics.median(r['wall_s'] for r in runs):.2f} s")
    print(json.dumps({"runs": runs}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
