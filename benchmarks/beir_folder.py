"""A question set written as a BEIR folder (Thakur et al., "BEIR: A Heterogeneous Benchmark for Zero-shot
Evaluation of Information Retrieval Models", NeurIPS 2021, https://github.com/beir-cellar/beir), the layout
`ragtui eval --dataset` reads: corpus.jsonl, queries.jsonl and qrels/test.tsv (every judged pair grade 1)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def write(out: Path, corpus: Sequence[dict[str, Any]], queries: Sequence[dict[str, Any]],
          qrels: Sequence[tuple[str, str]]) -> None:
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    (out / "corpus.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in corpus), "utf-8")
    (out / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), "utf-8")
    (out / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t1\n" for q, d in qrels), "utf-8")
