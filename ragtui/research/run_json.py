"""The one JSON shape of a research run (`ragtui research --json`, the MCP server's research tool): the report
and its checks, the plan, every source of every search, the searches, the rounds, the limits and the cost.
Text is made inert (`sanitize.clean`), names kept on one line: an agent's client or a terminal may show them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragtui.errors import RagtuiError
from ragtui.sanitize import clean, one_line

if TYPE_CHECKING:
    from ragtui.research.session import ResearchSession


def run_json(session: ResearchSession) -> dict[str, Any]:
    """The run as one object: the report and its checks, the plan with each sub-question's kept sources, every
    source of every search (the shape of `ask --json`'s sources, with its search's turn and sub-question and
    whether it is kept), the searches, the rounds, the limits reached and the cost."""
    conversation = session.conversation
    run = conversation.research
    if run is None:
        raise RagtuiError(f"session {session.id} is not a research run")
    report = conversation.turn if conversation.is_report else None
    sources, searches = [], []
    for t, turn in enumerate(conversation.turns, start=1):
        if report is not None and t == len(conversation.turns):
            break
        part = run.part_of(t)
        searches.append({"turn": t, "query": clean(turn.query), "part": None if part is None else part + 1,
                         "sources": [s.number for s in turn.sources], "error": clean(turn.error)})
        sources += [{**s.to_json(), "turn": t, "part": None if part is None else part + 1, "kept": s.kept}
                    for s in turn.sources]
    kept_of = {i: [s["number"] for s in sources if s["part"] == i + 1 and s["kept"]] for i in range(len(run.plan))}
    quotes = session.quote_checks(report) if report is not None else ()
    numbers = session.number_checks(report) if report is not None else ()
    return {
        "session": session.id, "question": clean(run.question),
        "collections": [one_line(c) for c in conversation.collections],
        "report": clean(report.answer) if report else "", "stop_reason": report.stop_reason.value if report else "",
        "error": clean(report.error if report else conversation.turn.error),
        "citations": list(report.citations) if report else [],
        "unknown_citations": list(report.unknown_citations) if report else [],
        "warnings": list(report.failed_checks) if report else [],
        "quotes": [{**q.to_json(), "quote": clean(q.quote)} for q in quotes],
        "numbers": [{**n.to_json(), "stated": clean(n.stated), "sentence": clean(n.sentence), "near": clean(n.near),
                     "verdict": clean(n.verdict)} for n in numbers],
        "unverified_citations": sorted({n for q in quotes if not q.verified for n in q.cited}),
        "plan": [{"part": i + 1, **sub.to_json(), "text": clean(sub.text), "kept_sources": kept_of[i]}
                 for i, sub in enumerate(run.plan)],
        "planned_by": one_line(run.planned_by), "rounds": run.rounds,
        "limits_hit": [limit.value for limit in run.limits_hit],
        "model_calls": run.cost.model_calls, "tokens": run.cost.tokens, "seconds": run.cost.seconds,
        "kept": [s["number"] for s in sources if s["kept"]],
        "sources": sources, "searches": searches,
    }
