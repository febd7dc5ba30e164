"""A research run's plan above the sources: each sub-question with where it stands (planned, searching,
annotating n/m, k sources kept, done, cancelled, cut or skipped at a limit), the round, the limits reached and,
at the end, the cost.

Hidden when the session is not a research run. A sub-question's text came from the model or the user: it goes
in as plain Text on one line, clipped, never as markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ragtui.model.research_run import ResearchRun, SubQuestion, SubState
from ragtui.sanitize import one_line

_STYLES = {SubState.SEARCHING: "bold", SubState.ANNOTATING: "bold", SubState.DONE: "green",
           SubState.CANCELLED: "yellow", SubState.CUT: "yellow", SubState.SKIPPED: "dim"}


def standing(sub: SubQuestion) -> str:
    """Where a sub-question stands, in a few words."""
    kept = f"{sub.kept} kept"
    if sub.state is SubState.SEARCHING:
        return "searching"
    if sub.state is SubState.ANNOTATING:
        return f"annotating {sub.annotated}/{sub.found}, {kept}"
    if sub.state is SubState.DONE:
        return f"done, {kept}"
    if sub.state is SubState.CANCELLED:
        return f"cancelled, {kept}"
    if sub.state is SubState.CUT:
        return f"cut at a limit, {kept}"
    if sub.state is SubState.SKIPPED:
        return "skipped: a limit was reached"
    return "planned"


class PlanProgress(Static):
    """The plan of the research run the panes show (`show_run`), redrawn as its sub-questions change."""

    run: ResearchRun | None = None
    finished = False             # the run ended: its cost is shown

    def show_run(self, run: ResearchRun | None, *, finished: bool = False) -> None:
        self.run, self.finished = run, finished
        self.display = run is not None and bool(run.plan)
        self._draw()

    def put(self, index: int, sub: SubQuestion) -> None:
        if self.run is not None and index < len(self.run.plan):
            self.show_run(self.run.with_sub(index, **{f: getattr(sub, f) for f in
                                                       ("state", "turns", "annotated", "found", "kept")}))

    def _draw(self) -> None:
        run = self.run
        if run is None:
            self.update("")
            return
        width = max(self.size.width - 2, 40) if self.size.width else 76
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, sub in enumerate(run.plan, start=1):
            said = standing(sub)
            words = one_line(sub.text)
            room = max(width - len(said) - 6, 10)
            words = words if len(words) <= room else words[:room - 1] + "…"
            text.append(f"{i}. {words}", style=_STYLES.get(sub.state, ""))
            text.append(f" · {said}\n", style="dim" if sub.state is SubState.PLANNED else "")
        by = "the question's parts" if run.planned_by == "fragments" else one_line(run.planned_by) or "-"
        cost = run.cost
        tail = f"round {run.rounds} · plan by {by}" if run.rounds else f"plan by {by}"
        if run.limits_hit:
            tail += " · limit reached: " + ", ".join(limit.value for limit in run.limits_hit)
        if self.finished:
            tail += f" · {cost.model_calls} calls, {cost.tokens} tokens, {cost.seconds:.0f} s"
        text.append(tail + " · X cancels the one searching", style="dim italic")
        self.update(text)

    def on_resize(self) -> None:
        self._draw()
