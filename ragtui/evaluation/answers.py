"""`ragtui eval --answers`: every question through the session `ragtui ask` runs, its answer and sources scored.

Each question is one `ResearchSession` over the eval collection (`runner.eval_index`)
with the configured models and settings: retrieve, annotate (when
annotation.enabled), pack, answer. What it kept, packed, cited and quoted is read
back from the session and scored against the qrels and the reference answers
(`answer_metrics`). Questions run one after another, so seconds per question are
the time a user waits. The sessions are saved to a history of their own in a
temporary folder, never the user's, and deleted with it.

A source counts as relevant when its document is judged relevant for the question;
a document's second chunk counts as relevant too (it is the same passage's
document). The questions the corpus does not answer (`Dataset.unanswerable`) are
asked too, after the others, and score only whether the product abstained.

With `judge`, a third model checks each answer statement against the sources it
cites (`judge.faithfulness`) and grades each answer against the references
(`grading`): the product's, and the floor's and ceilings' stand-ins
(`bounds`), so its correctness is read between them too; it first grades the
calibration set, and the report carries its agreement and kappa there. Its calls
are not counted in the cost.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragtui.config import Settings
from ragtui.evaluation.answer_metrics import AnsweredQuestion, summarise_answers
from ragtui.evaluation.beir import Dataset
from ragtui.evaluation.runner import EvalIndex, eval_index

if TYPE_CHECKING:
    from ragtui.evaluation.bounds import BoundAnswer
    from ragtui.evaluation.grading import Grader
    from ragtui.evaluation.judge import Judge
    from ragtui.history import HistoryStore

Progress = Callable[[str], None]


@dataclass
class AnswerReport:
    dataset: str
    queries: int
    documents: int
    chunks: int
    models: dict[str, str]                                  # role -> model (synthesis, annotator, embeddings, judge)
    settings: dict[str, Any]
    results: dict[str, dict[str, Any]]                      # metric -> mean, ci_low, ci_high, n, floor, ceiling
    per_query: dict[str, dict[str, float | None]]           # question id -> metric -> value (None: undefined)
    questions: list[dict[str, Any]] = field(default_factory=list)   # what each question's run produced
    timings_s: dict[str, float] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    unanswerable: int = 0                                   # of `queries`, those the corpus does not answer
    calibration: dict[str, Any] | None = None               # the judge's agreement on its calibration set
    kind: str = "answers"


async def run_answer_eval(settings: Settings, dataset: Dataset, *, progress: Progress = lambda _: None,
                          keep_index: bool = False, judge: str | None = None) -> AnswerReport:
    """Ingest (or reuse a kept index), then ask every question that has reference answers and every one the
    corpus does not answer, and score them."""
    from ragtui.evaluation.grading import Grader
    from ragtui.evaluation.judge import Judge
    from ragtui.llm.providers import GRADER_MAX_TOKENS, judge_model

    unjudged = [q for q in dataset.queries if not dataset.answers.get(q)]
    # built before the ingest, so that a judge model the server does not have fails at once
    judging = Judges(Judge(await judge_model(settings, judge)),
                     Grader(await judge_model(settings, judge, GRADER_MAX_TOKENS))) if judge else None
    try:
        async with eval_index(settings, dataset, keep_index, progress) as index:
            report = await answer_all(index, progress, judging)
    finally:
        if judging is not None:
            await judging.aclose()
    if unjudged:
        report.notices.append(f"{len(unjudged)} judged queries have no reference answers and were skipped")
    return report


@dataclass
class Judges:
    """The judge model's two roles: statements against their sources, answers against the references."""

    faithfulness: Judge
    correctness: Grader

    async def aclose(self) -> None:
        await self.faithfulness.aclose()
        await self.correctness.aclose()


async def answer_all(index: EvalIndex, progress: Progress, judges: Judges | None = None,
                     settings: Settings | None = None) -> AnswerReport:
    """Every question asked over `index` with `settings` (default: the index's workspace's; retrieval is always the
    workspace's), and scored."""
    from ragtui.evaluation.bounds import bound_answers, score_bounds
    from ragtui.history import HistoryStore

    settings, dataset = settings or index.workspace.settings, index.dataset
    qids = [q for q in dataset.queries if dataset.answers.get(q)]
    asked = [*qids, *dataset.unanswerable]
    notices = list(index.notices)
    answered: list[AnsweredQuestion] = []
    calibration = None
    started = time.perf_counter()
    if judges is not None:
        from ragtui.evaluation.grading import calibrate, load_calibration

        rows = load_calibration()
        progress(f"judge: grading its {len(rows)}-row calibration set")
        calibration = await calibrate(judges.correctness, rows)
    with tempfile.TemporaryDirectory(prefix="ragtui-eval-history-") as folder:
        history = HistoryStore(folder)
        for i, qid in enumerate(asked, start=1):
            one, texts = await _ask(index, settings, history, qid, notices)
            if judges is not None:
                from ragtui.evaluation.judge import judge_answer

                one.statements, one.supported = await judge_answer(judges.faithfulness, one.answer, texts)
                if one.answerable:
                    one.verdict, one.reason = await judges.correctness.verdict(one.question, one.references,
                                                                               one.answer)
            answered.append(one)
            if i % 10 == 0 or i == len(asked):
                progress(f"answered {i}/{len(asked)} questions")
    stand_ins = bound_answers(dataset, qids)
    bounds = score_bounds(stand_ins)
    if judges is not None:
        bounds["correctness"] = await _graded(judges.correctness, dataset, stand_ins)
        notices += judges.faithfulness.notices() + judges.correctness.notices()
    bounds["annotation_precision"] = {"floor": _keep_all_precision(answered)}
    per_query = {a.qid: a.scores(judged=judges is not None) for a in answered}
    if settings.annotation.enabled and not any(a.filtered for a in answered):
        notices.append("the annotator filtered no source: the precision of what it kept is the retrieval's "
                       "(packed_precision), so annotation_precision is not reported")
    return AnswerReport(
        dataset=dataset.name, queries=len(answered), documents=len(dataset.corpus), chunks=index.chunks,
        models={"synthesis": settings.llm.model,
                "annotator": settings.llm.annotator if settings.annotation.enabled else "off",
                "embeddings": ", ".join(settings.embed.all_models),
                **({"judge": judges.correctness.model.model} if judges else {})},
        settings=answer_settings(settings), results=summarise_answers(per_query, bounds), per_query=per_query,
        questions=[vars(a) for a in answered], notices=notices, unanswerable=len(dataset.unanswerable),
        calibration=calibration,
        timings_s={"ingest": index.ingest_s, "questions": round(time.perf_counter() - started, 1)})


async def _graded(grader: Grader, dataset: Dataset,
                  stand_ins: dict[str, dict[str, BoundAnswer]]) -> dict[str, dict[str, float]]:
    """Bound -> question -> the judge's score of that bound's stand-in answer."""
    from ragtui.evaluation.grading import VERDICT_SCORES

    out: dict[str, dict[str, float]] = {}
    for kind, by_question in stand_ins.items():
        for qid, stand_in in by_question.items():
            verdict, _ = await grader.verdict(dataset.queries[qid], stand_in.references, stand_in.answer)
            out.setdefault(kind, {})[qid] = VERDICT_SCORES.get(verdict, 0.0)
    return out


def _keep_all_precision(answered: list[AnsweredQuestion]) -> dict[str, float]:
    """Per question where the annotator filtered something: the precision of keeping every annotated source."""
    out = {}
    for a in answered:
        annotated = set(a.kept) | set(a.filtered)
        if a.filtered and a.answerable:
            out[a.qid] = len(annotated & set(a.relevant)) / len(annotated)
    return out


async def _ask(index: EvalIndex, settings: Settings, history: HistoryStore, qid: str,
               notices: list[str]) -> tuple[AnsweredQuestion, dict[int, str]]:
    """One question through a fresh session, metered, and the texts of its sources by number; a failed stage
    is the question's error, not the run's."""
    from ragtui.events import Notice, StageFailed
    from ragtui.llm.usage import metered
    from ragtui.model.conversation import AnnotationState
    from ragtui.research.session import ResearchSession

    dataset, workspace = index.dataset, index.workspace
    question = dataset.queries.get(qid) or dataset.unanswerable[qid]
    session = ResearchSession(settings, question, [index.name], history=history,
                              retrieve=workspace.retrieve)
    errors: list[str] = []
    started = time.perf_counter()
    try:
        with metered() as usage:
            async with aclosing(session.run()) as events:
                async for event in events:
                    if isinstance(event, StageFailed):
                        errors.append(f"{event.stage}: {event.message}")
                    elif isinstance(event, Notice) and event.level == "warning":
                        line = _notice_line(event.message)
                        if line not in notices and len(notices) < 50:
                            notices.append(line)
    finally:
        await session.aclose()
    seconds = time.perf_counter() - started
    turn = session.turn
    grades = dataset.qrels.get(qid, {})
    relevant = [s.number for s in turn.sources if grades.get(s.chunk.meta.source, 0) > 0]
    checks = session.quote_checks()
    windowed = [n for n in turn.prompt_numbers if session.use_in_answer(n) == "window"]
    asked = AnsweredQuestion(
        qid=qid, question=question, references=list(dataset.answers.get(qid, [])), answer=turn.answer,
        relevant=relevant, retrieved=[s.number for s in turn.sources], kept=[s.number for s in turn.relevant],
        filtered=[s.number for s in turn.sources if s.state is AnnotationState.IRRELEVANT and not s.relevant],
        packed=list(turn.prompt_numbers), windowed=windowed, cited=list(turn.citations),
        claimless=turn.echo or turn.non_answer,
        quotes=len(checks), quotes_verified=sum(c.verified for c in checks),
        quotes_misattributed=sum(c.state == "misattributed" for c in checks),
        numbers_unsupported=len(session.number_checks()),
        llm_calls=usage.calls, prompt_tokens=usage.prompt_tokens, output_tokens=usage.output_tokens,
        tokens_reported=usage.reported, seconds=round(seconds, 3), error="; ".join(errors))
    return asked, {s.number: s.chunk.text for s in turn.sources}


def _notice_line(message: str) -> str:
    """A notice with its question-specific tail cut (the first 160 characters), so repeats collapse."""
    return message if len(message) <= 160 else message[:159] + "…"


def answer_settings(settings: Settings) -> dict[str, Any]:
    """The settings an answer run is shaped by, recorded with its report."""
    return {"annotation.enabled": settings.annotation.enabled, "retrieve.annotate_max": settings.retrieve.annotate_max,
            "retrieve.top_k": settings.retrieve.top_k, "llm.max_tokens": settings.llm.max_tokens,
            "llm.context_window": settings.llm.context_window, "llm.context_chunks": settings.llm.context_chunks,
            "annotation.max_tokens": settings.annotation.max_tokens, "llm.provider": settings.llm.provider,
            "chunk.size_tokens": settings.chunk.size_tokens}


