"""`ragtui eval --answers` as Markdown: one row per metric with its mean, 95% CI and how many questions it covers;
and the paired comparison of two saved answer runs."""

from __future__ import annotations

from typing import Any

from ragtui.evaluation.answer_metrics import ANSWER_METRICS

_COUNTS = ("llm_calls", "prompt_tokens", "output_tokens", "seconds")


def _number(name: str, value: float, signed: bool = False) -> str:
    sign = "+" if signed else ""
    return f"{value:{sign}.1f}" if name in _COUNTS else f"{value:{sign}.3f}"


def answer_table(report: Any) -> str:
    models = ", ".join(f"{role} {name}" for role, name in report.models.items())
    shaped = ", ".join(f"{k} = {v}" for k, v in report.settings.items())
    lines = [f"{report.dataset}: {report.queries} questions answered, {report.documents} documents "
             f"({report.chunks} chunks); {models}", f"settings: {shaped}", "",
             "| metric | mean [95% bootstrap CI] | questions | meaning |", "|---|---|---|---|"]
    for name, row in report.results.items():
        lines.append(f"| {name} | {_number(name, row['mean'])} [{_number(name, row['ci_low'])}, "
                     f"{_number(name, row['ci_high'])}] | {int(row['n'])} | {ANSWER_METRICS[name]} |")
    errors = sum(1 for q in report.questions if q["error"])
    if errors:
        lines.append(f"note: {errors} question(s) ended with a failed stage (their scores count as given: no "
                     "answer scores 0); --json names each")
    reported = sum(q["tokens_reported"] for q in report.questions)
    calls = sum(q["llm_calls"] for q in report.questions)
    if calls and reported < calls:
        lines.append(f"note: tokens of {calls - reported} of {calls} calls are estimates (characters / 3.5); "
                     "the server did not report them")
    lines += [f"note: {n}" for n in report.notices]
    return "\n".join(lines)


def answer_comparison(title: str, diffs: dict[str, dict[str, float]]) -> str:
    """One row per metric: B - A, [95% paired bootstrap CI], over the questions both runs have it for."""
    lines = [f"{title}: difference B - A, mean [95% paired bootstrap CI]; * = CI excludes 0", "",
             "| metric | B - A | questions | B wins |", "|---|---|---|---|"]
    for name, d in diffs.items():
        star = "*" if d["ci_low"] > 0 or d["ci_high"] < 0 else ""
        lines.append(f"| {name} | {_number(name, d['diff'], True)} [{_number(name, d['ci_low'], True)}, "
                     f"{_number(name, d['ci_high'], True)}]{star} | {int(d['n'])} | {d['b_wins']:.2f} |")
    return "\n".join(lines)
