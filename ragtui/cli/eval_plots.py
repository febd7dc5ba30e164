"""`ragtui eval --plot [METRIC ...]`: after the table, each metric's mean and 95% bootstrap CI drawn as a whisker
(`plots.draw_intervals`), so that overlapping intervals are seen as overlapping. A retrieval run (a dataset or
`--from-history`) draws one plot per metric with a row per mode (nDCG@10 when no metric is named); an answer run one
plot of its rates (every metric in [0, 1], or those named) with a row per metric, and one plot per count it is asked
for (calls, tokens, seconds), each on its own axis."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ragtui.errors import RagtuiError

DEFAULT_RETRIEVAL = ("ndcg@10",)


def add_plot_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plot", nargs="*", metavar="METRIC",
                        help="after the table, draw each metric's mean and 95%% CI as a whisker per mode (a "
                             "retrieval run: nDCG@10 unless metrics are named) or per metric (--answers: its rates "
                             "unless metrics are named); plain characters, without colour, when the output is not "
                             "a terminal or NO_COLOR is set")


def refuse_plot_flags(args: argparse.Namespace, retrieval_metrics: Sequence[str]) -> None:
    """One usage error for a --plot that cannot be drawn: with --json or --compare-runs, or of a metric the run
    does not measure."""
    if args.plot is None:
        return
    if args.json:
        raise RagtuiError("--plot draws for a reader; --json is for a program: pass one of them", exit_code=2)
    if args.compare_runs:
        raise RagtuiError("--plot draws a run's metrics; --compare-runs prints the differences of two saved runs",
                          exit_code=2)
    known = _scoreboard_metrics() if args.models else _answer_metrics() if args.answers else tuple(retrieval_metrics)
    unknown = [m for m in args.plot if m not in known]
    if unknown:
        raise RagtuiError(f"--plot {' '.join(unknown)}: not a metric of this run; choose from {', '.join(known)}",
                          exit_code=2)


def _scoreboard_metrics() -> tuple[str, ...]:
    from ragtui.evaluation.scoreboard import SCOREBOARD_METRICS

    return tuple(SCOREBOARD_METRICS)


def _answer_metrics() -> tuple[str, ...]:
    from ragtui.evaluation.answer_metrics import ANSWER_METRICS

    return tuple(ANSWER_METRICS)


def retrieval_plots(report: Any, metrics: Sequence[str], titles: dict[str, str]) -> str:
    """One plot per metric (nDCG@10 when none is named), a row per mode the run scored."""
    from ragtui.plots import Interval

    charts = []
    for metric in metrics or DEFAULT_RETRIEVAL:
        rows = [Interval(mode, scores[metric]["mean"], scores[metric]["ci_low"], scores[metric]["ci_high"])
                for mode, scores in report.results.items()]
        charts.append(interval_plot(rows, f"{titles[metric]} per mode: mean and 95% bootstrap CI", (0.0, 1.0)))
    return "\n".join(charts)


def answer_plots(report: Any, metrics: Sequence[str]) -> str:
    """The rates asked for (all of them when none is named) in one plot, a row per metric; each count asked for
    in a plot of its own."""
    from ragtui.evaluation.answer_metrics import COUNT_METRICS
    from ragtui.plots import Interval

    def row(name: str) -> Interval:
        scores = report.results[name]
        return Interval(name, scores["mean"], scores["ci_low"], scores["ci_high"])

    named = [m for m in metrics if m in report.results]
    rates = [m for m in (named if metrics else report.results) if m not in COUNT_METRICS]
    charts = [interval_plot([row(m) for m in rates], "answer metrics: mean and 95% bootstrap CI", (0.0, 1.0))] \
        if rates else []
    charts += [interval_plot([row(m)], f"{m} per question: mean and 95% bootstrap CI", None)
               for m in named if m in COUNT_METRICS]
    missing = [m for m in metrics if m not in report.results]
    charts += [f"(no question of this run has {m}: nothing to plot)" for m in missing]
    return "\n".join(charts)


def scoreboard_plots(report: Any, metrics: Sequence[str]) -> str:
    """One plot per metric asked for (every rate the scoreboard measured when none is named), a row per model;
    a count (seconds, tokens) on its own axis."""
    from ragtui.evaluation.answer_metrics import COUNT_METRICS
    from ragtui.plots import Interval

    measured = [m for m in dict.fromkeys(k for scores in report.results.values() for k in scores)
                if metrics or m not in COUNT_METRICS]
    charts = []
    for metric in (metrics or measured):
        rows = [Interval(model, scores[metric]["mean"], scores[metric]["ci_low"], scores[metric]["ci_high"])
                for model, scores in report.results.items() if metric in scores]
        if not rows:
            charts.append(f"(no model of this run has {metric}: nothing to plot)")
            continue
        bounds = None if metric in COUNT_METRICS else (0.0, 1.0)
        charts.append(interval_plot(rows, f"{metric} per model (95% CI)", bounds))
    return "\n".join(charts)


def interval_plot(rows: Sequence[Any], title: str, bounds: tuple[float, float] | None) -> str:
    """Rows of (label, value, ci_low, ci_high) (a mode, a metric or a model each), a whisker each, for stdout; a
    sentence where the terminal is too narrow."""
    from ragtui import plots

    plot = plots.for_stream(lambda plt: plots.draw_intervals(plt, rows, title=title, bounds=bounds),
                            plots.intervals_height(len(rows)), sys.stdout)
    return plot if plot is not None else plots.too_narrow()
