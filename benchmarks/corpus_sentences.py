"""Benchmark text re-mixed from the sentences of the SQuAD and Cranfield corpora (shared/data/eval).

The callers draw with their own seeded `random.Random`, so a size gives the same text every time.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path


def sentences(eval_dir: Path) -> list[str]:
    """The corpora's sentences longer than 20 characters, in corpus order (the pool to draw from)."""
    out = []
    for name in ("squad-v1.1-dev", "cranfield"):
        for line in (eval_dir / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            out.extend(s for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]) if len(s) > 20)
    return out


def draw(rng: random.Random, pool: list[str], chars: int) -> list[str]:
    """Sentences drawn from `pool` until they, each with one separator, reach `chars` characters."""
    parts, size = [], 0
    while size < chars:
        s = rng.choice(pool)
        parts.append(s)
        size += len(s) + 1
    return parts
