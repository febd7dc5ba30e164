"""`ragtui eval`: retrieval quality per mode on a BEIR dataset, with bootstrap 95% CIs; with `--answers`,
the whole session (retrieve, annotate, answer) per question, scored against the qrels and reference answers.

`--compare A B` scores two modes of one run as a pair; `--compare-runs X.json Y.json`
pairs two saved `--json` reports (two settings, e.g. `--set` on one of them; two
retrieval reports or two answer reports). Both print the paired bootstrap CI of the
difference, which is what a default is chosen by.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ragtui.cli.eval_plots import add_plot_argument, answer_plots, refuse_plot_flags, retrieval_plots, scoreboard_plots
from ragtui.cli.judgments_cmd import add_history_arguments, history_eval
from ragtui.config import Settings
from ragtui.evaluation.runner import EVAL_MODES

MODES = tuple(EVAL_MODES)
COLUMNS = (("ndcg@10", "nDCG@10"), ("ndcge@10", "nDCGe@10"), ("p@5", "P@5"), ("recall@5", "R@5"),
           ("success@5", "S@5"), ("recall@10", "R@10"), ("recall@100", "R@100"), ("mrr@10", "MRR@10"),
           ("map", "MAP"))
DEFAULT_CONCURRENCY = 4


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("eval", help="measure retrieval on a BEIR dataset (corpus, queries, qrels/test.tsv), "
                                         "or on your collections against your own judgments (--from-history)")
    parser.add_argument("--dataset", type=Path, metavar="DIR", help="BEIR-format folder")
    parser.add_argument("--modes", nargs="+", choices=MODES, metavar="MODE",
                        help=f"modes to run (default: all of {', '.join(MODES)})")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N judged queries (qrels order)")
    parser.add_argument("--json", action="store_true", help="the report as JSON (with per-query scores)")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"), choices=MODES,
                        help="also score mode B against mode A: paired bootstrap CI of B - A per metric")
    parser.add_argument("--compare-runs", nargs=2, type=Path, metavar=("A.json", "B.json"),
                        help="no run: compare two saved --json reports (same queries) per mode they share")
    parser.add_argument("--keep-index", action="store_true",
                        help="keep the eval collection (named by a hash of the dataset, chunking and embedding "
                             "provider, server and models) and reuse it on the next run with the same shape")
    parser.add_argument("--sources", action="store_true",
                        help="score the sources a question would annotate (per-file cap, cuts and annotate_max "
                             "applied; a document's repeat counts as not relevant) instead of the fused ranking")
    add_history_arguments(parser)
    parser.add_argument("--concurrency", type=int, metavar="N",
                        help=f"queries retrieved at once (default {DEFAULT_CONCURRENCY}; 1 for a chat server that "
                             "serves one stream at a time, e.g. llama-cpp-python's, when a [strategies] option asks "
                             "the model)")
    parser.add_argument("--answers", action="store_true",
                        help="ask every question with reference answers (metadata.answers) through the configured "
                             "models and score annotation, answer, citations, quotes and cost")
    parser.add_argument("--models", nargs="+", metavar="MODEL",
                        help="with --answers: ask the same questions through each chat model (MODEL, or "
                             "MODEL@http://HOST:PORT/v1 on an OpenAI-compatible server) and print one grounding "
                             "table with paired CIs between the models")
    parser.add_argument("--judge", metavar="MODEL",
                        help="with --answers: MODEL judges each answer statement against the sources it cites "
                             "(faithfulness; off by default)")
    add_plot_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.errors import RagtuiError
    from ragtui.evaluation.beir import load_dataset
    from ragtui.evaluation.runner import run_eval

    refuse_plot_flags(args, [k for k, _ in COLUMNS])
    if args.compare_runs:
        print(compare_saved(*args.compare_runs))
        return 0
    if args.dataset is None and args.from_history is None:
        raise RagtuiError("eval needs --dataset DIR, --from-history [COLLECTION ...] or --compare-runs A.json "
                          "B.json", exit_code=2)
    if args.concurrency is not None and args.concurrency < 1:
        raise RagtuiError(f"--concurrency {args.concurrency}: expected 1 or more", exit_code=2)
    refuse_ignored_flags(args)
    args.modes = args.modes or list(MODES)
    args.concurrency = args.concurrency or DEFAULT_CONCURRENCY

    def progress(message: str) -> None:
        print(f"eval: {message}", file=sys.stderr, flush=True)

    if args.from_history is not None:
        evaluation = history_eval(args, settings, progress)
    else:
        dataset = load_dataset(args.dataset).limited(args.limit)
        if args.answers and not dataset.answers:
            raise RagtuiError(f"{args.dataset}: no judged query carries reference answers (metadata.answers); "
                              "--answers needs them", exit_code=2)
        progress(f"{dataset.name}: {len(dataset.corpus)} documents, {len(dataset.queries)} judged queries")
        if args.answers:
            return run_answers(args, settings, dataset, progress)
        evaluation = run_eval(settings, dataset, args.modes, progress=progress,
                              compare_pairs=[tuple(args.compare)] if args.compare else [],
                              keep_index=args.keep_index, sources=args.sources,
                              concurrency=args.concurrency)
    try:
        report = asyncio.run(evaluation)
    except Exception as exc:  # an unreachable embedder or a store failure ends the run with one line
        raise RagtuiError(f"eval failed: {exc}",
                          exit_code=exc.exit_code if isinstance(exc, RagtuiError) else 1) from exc
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print(markdown_table(report))
    if args.plot is not None:
        print("\n" + retrieval_plots(report, args.plot, dict(COLUMNS)))
    return 0


def refuse_ignored_flags(args: argparse.Namespace) -> None:
    """One usage error for a flag the chosen run would not use, before anything runs."""
    from ragtui.errors import RagtuiError

    if args.judge and not args.answers:
        raise RagtuiError("--judge goes with --answers", exit_code=2)
    if args.models and not args.answers:
        raise RagtuiError("--models goes with --answers", exit_code=2)
    if args.models and args.judge:
        raise RagtuiError("--models compares grounding without a judge: it takes no --judge", exit_code=2)
    if args.weak and args.from_history is None:
        raise RagtuiError("--weak goes with --from-history (it counts the weak labels of your judgments)",
                          exit_code=2)
    if not args.answers:
        return
    if args.from_history is not None:
        raise RagtuiError("--answers asks a dataset's questions: it takes --dataset DIR, not --from-history",
                          exit_code=2)
    given = [flag for flag, value in (("--modes", args.modes), ("--compare", args.compare),
                                      ("--sources", args.sources), ("--concurrency", args.concurrency)) if value]
    if given:
        raise RagtuiError(f"--answers runs each question through the configured session, one at a time: it takes "
                          f"no {', '.join(given)}", exit_code=2)


def run_answers(args: argparse.Namespace, settings: Settings, dataset: Any, progress: Any) -> int:
    from ragtui.cli.answer_report import answer_table
    from ragtui.errors import RagtuiError
    from ragtui.evaluation.answers import run_answer_eval
    from ragtui.llm.providers import model_not_set

    if args.models:
        from ragtui.cli.answer_report import scoreboard_table
        from ragtui.evaluation.scoreboard import parse_models, run_scoreboard

        models = parse_models(args.models)
        evaluation: Coroutine[Any, Any, Any] = run_scoreboard(settings, dataset, models, progress=progress,
                                                              keep_index=args.keep_index)
        table: Any = scoreboard_table
    elif not settings.llm.model:
        raise model_not_set("eval --answers asks the configured models: set [llm] model, or --set llm.model=NAME")
    else:
        evaluation = run_answer_eval(settings, dataset, progress=progress, keep_index=args.keep_index,
                                     judge=args.judge)
        table = answer_table
    try:
        report = asyncio.run(evaluation)
    except Exception as exc:  # an unreachable server or a store failure ends the run with one line
        raise RagtuiError(f"eval failed: {exc}",
                          exit_code=exc.exit_code if isinstance(exc, RagtuiError) else 1) from exc
    print(json.dumps(asdict(report), indent=2) if args.json else table(report))
    if args.plot is not None:
        print("\n" + (scoreboard_plots(report, args.plot) if args.models else answer_plots(report, args.plot)))
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
    lines.append("")
    lines += [f"cost per query ({mode}): {c['llm_calls']:.2f} model calls, {c['llm_s']:.2f} s of model time, "
              f"{c['searches']:.2f} searches, {c['seconds']:.2f} s in all" for mode, c in report.costs.items()]
    for pair, diffs in report.comparisons.items():
        lines += ["", comparison_table(pair, diffs)]
    lines += [f"note: {n}" for n in report.notices]
    return "\n".join(lines)


def comparison_table(title: str, diffs: dict[str, dict[str, float]]) -> str:
    """One row: B - A per metric, [95% paired bootstrap CI]; a CI that excludes 0 is marked *."""
    def cell(d: dict[str, float]) -> str:
        star = "*" if d["ci_low"] > 0 or d["ci_high"] < 0 else ""
        return f"{d['diff']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]{star}"

    return "\n".join([f"{title}: difference B - A, mean [95% paired bootstrap CI]; * = CI excludes 0", "",
                      "| pair | " + " | ".join(t for _, t in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|",
                      f"| {title} | " + " | ".join(cell(diffs[k]) for k, _ in COLUMNS) + " |"])


def compare_saved(path_a: Path, path_b: Path) -> str:
    """Paired differences between two saved reports, for every mode both ran (run B minus run A)."""
    from ragtui.errors import RagtuiError
    from ragtui.evaluation.metrics import compare

    reports, kinds = [], []
    for path in (path_a, path_b):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            reports.append(data["per_query"])
            kinds.append(data.get("kind", "retrieval"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RagtuiError(f"{path}: not a saved `ragtui eval --json` report with per-query scores "
                              f"({type(exc).__name__})", exit_code=2) from None
    if kinds[0] != kinds[1]:
        raise RagtuiError(f"{path_a} is a {kinds[0]} report and {path_b} a {kinds[1]} one: compare like with like",
                          exit_code=2)
    if kinds[0] == "answers":
        from ragtui.cli.answer_report import answer_comparison
        from ragtui.evaluation.answer_metrics import compare_answers

        try:
            return answer_comparison(f"{path_b.name} vs {path_a.name}", compare_answers(*reports))
        except (ValueError, TypeError, AttributeError) as exc:
            raise RagtuiError(f"answers: {exc}", exit_code=2) from None
    shared = [m for m in reports[0] if m in reports[1]]
    if not shared:
        raise RagtuiError(f"{path_a} and {path_b} share no mode", exit_code=2)
    tables = []
    for mode in shared:
        try:
            diffs = compare(reports[0][mode], reports[1][mode])
        except ValueError as exc:
            raise RagtuiError(f"{mode}: {exc}", exit_code=2) from None
        tables.append(comparison_table(f"{mode}: {path_b.name} vs {path_a.name}", diffs))
    return "\n\n".join(tables)
