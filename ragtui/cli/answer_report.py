"""`ragtui eval --answers` as Markdown: one row per metric with its mean, 95% CI, how many questions it covers, its
floor and its ceiling; the abstention lines; the judge's agreement on its calibration set; and the paired comparison
of two saved answer runs; and the scoreboard of several models on the same questions."""

from __future__ import annotations

from typing import Any

from ragtui.evaluation.answer_metrics import ANSWER_METRICS, COUNT_METRICS


def _number(name: str, value: float, signed: bool = False) -> str:
    sign = "+" if signed else ""
    return f"{value:{sign}.1f}" if name in COUNT_METRICS else f"{value:{sign}.3f}"


def _interval(name: str, row: dict[str, Any]) -> str:
    return f"{_number(name, row['mean'])} [{_number(name, row['ci_low'])}, {_number(name, row['ci_high'])}]"


def _bound(name: str, row: dict[str, Any] | None) -> str:
    return "—" if not row else f"{_number(name, row['mean'])} (n {int(row['n'])})"


def answer_table(report: Any) -> str:
    models = ", ".join(f"{role} {name}" for role, name in report.models.items())
    shaped = ", ".join(f"{k} = {v}" for k, v in report.settings.items())
    answerable = report.queries - report.unanswerable
    lines = [f"{report.dataset}: {report.queries} questions asked ({answerable} answerable, "
             f"{report.unanswerable} the corpus does not answer), {report.documents} documents "
             f"({report.chunks} chunks); {models}", f"settings: {shaped}", "",
             "floor: another question's reference given as the answer; ceiling: the gold passage given as the "
             "answer / a second reference (where the question has one) scored against the others", "",
             "| metric | mean [95% bootstrap CI] | questions | floor | ceiling: passage | ceiling: 2nd reference "
             "| meaning |", "|---|---|---|---|---|---|---|"]
    for name, row in report.results.items():
        ceiling = row.get("ceiling") or {}
        lines.append(f"| {name} | {_interval(name, row)} | {int(row['n'])} | {_bound(name, row.get('floor'))} | "
                     f"{_bound(name, ceiling.get('passage'))} | {_bound(name, ceiling.get('second_reference'))} | "
                     f"{ANSWER_METRICS[name]} |")
    lines += _abstention_lines(report.results)
    if report.calibration:
        lines += ["", calibration_line(report.calibration)]
    errors = sum(1 for q in report.questions if q["error"])
    if errors:
        lines.append(f"note: {errors} question(s) ended with a failed stage (their scores count as given: no "
                     "answer scores 0); --json names each")
    lines += _estimated_tokens(report.questions)
    lines += [f"note: {n}" for n in report.notices]
    return "\n".join(lines)


def _estimated_tokens(questions: list[dict[str, Any]], whose: str = "") -> list[str]:
    """The note that says how many calls' tokens are estimates, when the server did not report them all."""
    reported = sum(q["tokens_reported"] for q in questions)
    calls = sum(q["llm_calls"] for q in questions)
    if calls and reported < calls:
        return [f"note: {whose}tokens of {calls - reported} of {calls} calls are estimates (characters / 3.5); "
                "the server did not report them"]
    return []


def _abstention_lines(results: dict[str, Any]) -> list[str]:
    lines = []
    for name, words in (("abstention", "abstained on {n} unanswerable question(s)"),
                        ("false_abstention", "abstained on {n} answerable question(s) (false abstention)")):
        if name in results:
            row = results[name]
            lines.append(f"{words.format(n=int(row['n']))}: {_interval(name, row)} of them")
    return ["", *lines] if lines else []


def calibration_line(calibration: dict[str, Any]) -> str:
    """The judge's agreement with the calibration labels, and kappa, with their CIs."""
    agreement, kappa = calibration["agreement"], calibration["kappa"]
    kappa_text = ("undefined (one label for every row)" if kappa["mean"] is None else
                  f"{kappa['mean']:.3f} [{kappa['ci_low']:.3f}, {kappa['ci_high']:.3f}]")
    return (f"judge calibration ({calibration['set']}, {calibration['rows']} labelled answers): agreement "
            f"{agreement['mean']:.3f} [{agreement['ci_low']:.3f}, {agreement['ci_high']:.3f}], Cohen's kappa "
            f"{kappa_text}; read correctness only as far as these allow")


def answer_comparison(title: str, diffs: dict[str, dict[str, float]]) -> str:
    """One row per metric: B - A, [95% paired bootstrap CI], over the questions both runs have it for."""
    lines = [f"{title}: difference B - A, mean [95% paired bootstrap CI]; * = CI excludes 0", "",
             "| metric | B - A | questions | B wins |", "|---|---|---|---|"]
    for name, d in diffs.items():
        star = "*" if d["ci_low"] > 0 or d["ci_high"] < 0 else ""
        lines.append(f"| {name} | {_number(name, d['diff'], True)} [{_number(name, d['ci_low'], True)}, "
                     f"{_number(name, d['ci_high'], True)}]{star} | {int(d['n'])} | {d['b_wins']:.2f} |")
    return "\n".join(lines)


def scoreboard_table(board: Any) -> str:
    """One row per grounding metric: each model's mean [95% CI] (n: the questions it is defined for), then each
    pair's paired difference; a legend of the metrics below."""
    from ragtui.evaluation.scoreboard import SCOREBOARD_METRICS

    pairs = list(board.comparisons)
    answerable = board.queries - board.unanswerable
    models = ", ".join(f"{m} (annotator {board.annotators.get(m, 'off')})" for m in board.models)
    lines = [f"{board.dataset}: {board.queries} questions ({answerable} answerable, {board.unanswerable} the corpus "
             f"does not answer), {board.documents} documents ({board.chunks} chunks), the same retrieval for "
             f"every model; {models}",
             "each model: mean [95% bootstrap CI] (n questions); each pair: difference, mean [95% paired bootstrap "
             "CI over the same questions]; * = CI excludes 0", "",
             "| metric | " + " | ".join(board.models) + " | " + " | ".join(pairs) + " |",
             "|---" * (1 + len(board.models) + len(pairs)) + "|"]
    names = [m for m in SCOREBOARD_METRICS if any(m in board.results[x] for x in board.models)]
    for name in names:
        cells = [f"{_interval(name, row)} (n {int(row['n'])})" if (row := board.results[x].get(name)) else "—"
                 for x in board.models]
        for pair in pairs:
            d = board.comparisons[pair].get(name)
            star = "*" if d and (d["ci_low"] > 0 or d["ci_high"] < 0) else ""
            cells.append(f"{_number(name, d['diff'], True)} [{_number(name, d['ci_low'], True)}, "
                         f"{_number(name, d['ci_high'], True)}]{star}" if d else "—")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", *(f"{name}: {ANSWER_METRICS[name]}" for name in names)]
    for model in board.models:
        errors = sum(1 for q in board.questions[model] if q["error"])
        if errors:
            lines.append(f"note: {model}: {errors} question(s) ended with a failed stage (they count as given: no "
                         "answer scores 0); --json names each")
        lines += _estimated_tokens(board.questions[model], f"{model}: ")
    lines += [f"note: {n}" for n in board.notices]
    return "\n".join(lines)

