"""`ragtui eval --dataset DIR`: retrieval quality per mode on a BEIR dataset, with bootstrap 95% CIs (spec §11)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ragtui.config import Settings
from ragtui.evaluation.runner import EVAL_MODES

MODES = tuple(EVAL_MODES)
COLUMNS = (("ndcg@10", "nDCG@10"), ("recall@10", "R@10"), ("recall@100", "R@100"), ("mrr@10", "MRR@10"),
           ("map", "MAP"))


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("eval", help="measure retrieval on a BEIR dataset (corpus, queries, qrels/test.tsv)")
    parser.add_argument("--dataset", type=Path, required=True, metavar="DIR", help="BEIR-format folder")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), metavar="MODE",
                        help=f"modes to run (default: all of {', '.join(MODES)})")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N judged queries (qrels order)")
    parser.add_argument("--json", action="store_true", help="the report as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.errors import RagtuiError
    from ragtui.evaluation.beir import load_dataset
    from ragtui.evaluation.runner import run_eval

    dataset = load_dataset(args.dataset).limited(args.limit)

    def progress(message: str) -> None:
        print(f"eval: {message}", file=sys.stderr, flush=True)

    progress(f"{dataset.name}: {len(dataset.corpus)} documents, {len(dataset.queries)} judged queries")
    try:
        report = asyncio.run(run_eval(settings, dataset, args.modes, progress=progress))
    except Exception as exc:  # an unreachable embedder or a store failure ends the run with one line
        raise RagtuiError(f"eval failed: {exc}",
                          exit_code=exc.exit_code if isinstance(exc, RagtuiError) else 1) from exc
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print(markdown_table(report))
    return 0


def markdown_table(report: Any) -> str:
    lines = [f"{report.dataset}: {report.queries} queries, {report.documents} documents ({report.chunks} chunks), "
             f"embeddings {', '.join(report.models)}; top {report.settings['top_k_per_leg']} per leg, "
             f"fusion {report.settings['fusion']}; mean [95% bootstrap CI]", "",
             "| mode | " + " | ".join(title for _, title in COLUMNS) + " |",
             "|---" * (len(COLUMNS) + 1) + "|"]
    for mode, metrics in report.results.items():
        cells = [f"{metrics[k]['mean']:.3f} [{metrics[k]['ci_low']:.3f}, {metrics[k]['ci_high']:.3f}]"
                 for k, _ in COLUMNS]
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    lines += [f"note: {n}" for n in report.notices]
    return "\n".join(lines)
