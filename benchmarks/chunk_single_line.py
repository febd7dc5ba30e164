"""Chunking one long line: CPU seconds of the boundary-aware window (`window_spans`) over a single line
with no whitespace (base64-like) and over prose, per MiB. The line case had scanned every character of
each overlap region in Python (about 3 CPU-s per MiB, ten times prose); the word-start search now runs in
the regex engine.

    python -m benchmarks.chunk_single_line [--mib 5]
"""

from __future__ import annotations

import argparse
import json
import random
import time

from ragtui.ingest.chunking import window_chars, window_spans


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(2)
    size = args.mib * 2**20
    texts = {"one line, no whitespace": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789+/")
                                                for _ in range(size)),
             "one character repeated": "a" * size,
             "prose": " ".join(rng.choice(("pump", "valve", "seal.", "rotor", "flow!")) for _ in range(size // 5))}
    chars, overlap = window_chars(384, 50)
    out = {}
    for name, text in texts.items():
        began = time.process_time()
        spans = window_spans(text, chars, overlap)
        cpu = time.process_time() - began
        out[name] = {"mib": round(len(text) / 2**20, 2), "chunks": len(spans), "cpu_s": round(cpu, 2),
                     "cpu_s_per_mib": round(cpu / (len(text) / 2**20), 3)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
