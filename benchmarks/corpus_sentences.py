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


def chunk_texts(eval_dir: Path, n: int, chars: int = 1_500) -> list[str]:
    """`n` chunks of about `chars` characters re-mixed from the corpora's sentences (seeded: the same every time)."""
    pool = sentences(eval_dir)
    rng = random.Random(11)
    return [" ".join(draw(rng, pool, chars)) + " " for _ in range(n)]


def questions(eval_dir: Path, n: int) -> list[str]:
    """`n` questions: two thirds drawn from SQuAD's, the rest from Cranfield's (seeded)."""
    rng = random.Random(7)
    squad = [json.loads(x)["text"] for x in (eval_dir / "squad-v1.1-dev" / "queries.jsonl").read_text().splitlines()]
    cran = [json.loads(x)["text"] for x in (eval_dir / "cranfield" / "queries.jsonl").read_text().splitlines()]
    return rng.sample(squad, n * 2 // 3) + rng.sample(cran, n - n * 2 // 3)
