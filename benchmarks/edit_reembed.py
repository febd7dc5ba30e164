"""One paragraph of a long PDF edited: how many of its chunks `ragtui ingest` embeds again.

    python -m benchmarks.edit_reembed [--pages 500] [--work DIR] [--eval-data DIR] [--edits 5]

A PDF of `--pages` pages of prose (paragraphs of SQuAD and Cranfield sentences,
seeded; ~2,000 characters a page) is ingested by `python -m ragtui ingest` in a
subprocess, the shipped chunk settings, its chunks embedded over HTTP by the
tests' fake Ollama (hashed vectors; every text it is sent is counted). Then, one
at a time, `--edits` different pages each get one paragraph rewritten (a
paragraph of other sentences, of another length) and the file is ingested again:
the texts embedded by that ingest, against the file's chunks, is the share
re-embedded. Wall and CPU of each ingest (the child's own, `wait4`) and a
yardstick before and after. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.corpus_sentences import draw, sentences
from benchmarks.ingest_scale import yardstick
from benchmarks.keyword_scale import ROOT

PAGE_CHARS = 2000


def paragraphs(rng: random.Random, pool: list[str]) -> list[str]:
    """One page: paragraphs of four sentences."""
    parts = draw(rng, pool, PAGE_CHARS)
    return [" ".join(parts[i:i + 4]) for i in range(0, len(parts), 4)]


def write_pdf(path: Path, pages: list[list[str]]) -> None:
    import pymupdf

    doc = pymupdf.open()
    for page in pages:
        doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 562, 792), "\n\n".join(page), fontsize=8)
    doc.save(path)
    doc.close()


def stand_in_ollama() -> Any:
    from tests.fake_ollama import FakeOllama

    return FakeOllama().start()


def ingest(work: Path, folder: Path, ollama: Any) -> dict[str, Any]:
    """One `ragtui ingest` in a fresh process: wall, its CPU, and the texts the fake Ollama was sent."""
    before = len(ollama.calls("/api/embed"))
    argv = [sys.executable, "-m", "ragtui", "--data-dir", str(work / "data"), "--ollama-host", ollama.url,
            "ingest", str(folder), "-c", "manual"]
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                             env={**os.environ, "XDG_CONFIG_HOME": str(work / "no-config")})
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"ragtui ingest failed:\n{output[-2000:]}")
    texts = 0
    for call in ollama.calls("/api/embed")[before:]:
        inputs = call.body.get("input", [])
        texts += 1 if isinstance(inputs, str) else len(inputs)
    chunks = next(line for line in output.splitlines() if line.startswith("chunks: "))
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "embedded_texts": texts, "chunks_line": chunks}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragtui-edit-reembed"))
    parser.add_argument("--eval-data", type=Path, default=ROOT.parent / "shared" / "data" / "eval")
    args = parser.parse_args()
    work = args.work.resolve()
    folder = work / "docs"
    folder.mkdir(parents=True, exist_ok=True)
    pool = sentences(args.eval_data)
    rng = random.Random(args.pages)
    pages = [paragraphs(rng, pool) for _ in range(args.pages)]
    write_pdf(folder / "manual.pdf", pages)
    ollama = stand_in_ollama()
    out: dict[str, Any] = {"pages": args.pages, "yardstick_before": yardstick()}
    try:
        first = ingest(work, folder, ollama)
        out["first"] = first
        edits = []
        for n in range(args.edits):
            page = rng.randrange(args.pages)
            which = rng.randrange(len(pages[page]))
            pages[page][which] = " ".join(draw(rng, pool, len(pages[page][which]) // 2 + 40))
            write_pdf(folder / "manual.pdf", pages)
            again = ingest(work, folder, ollama)
            edits.append({"page": page + 1, "paragraph": which + 1, **again,
                          "share": again["embedded_texts"] / first["embedded_texts"]})
            print(f"edit {n + 1}: page {page + 1}, paragraph {which + 1}: {again['embedded_texts']} of "
                  f"{first['embedded_texts']} chunks embedded again", file=sys.stderr, flush=True)
        out["edits"] = edits
    finally:
        ollama.stop()
    out["yardstick_after"] = yardstick()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
