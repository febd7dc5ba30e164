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
document). With `judge`, a third model checks each answer statement against the
sources it cites (`judge.faithfulness`); its calls are not counted in the cost.
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
    results: dict[str, dict[str, float]]                    # metric -> mean / ci_low / ci_high / n
    per_query: dict[str, dict[str, float | None]]           # question id -> metric -> value (None: undefined)
    questions: list[dict[str, Any]] = field(default_factory=list)   # what each question's run produced
    timings_s: dict[str, float] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    kind: str = "answers"


async def run_answer_eval(settings: Settings, dataset: Dataset, *, progress: Progress = lambda _: None,
                          keep_index: bool = False, judge: str | None = None) -> AnswerReport:
    """Ingest (or reuse a kept index), then ask every question that has reference answers and score it."""
    from ragtui.evaluation.judge import Judge
    from ragtui.llm.providers import judge_model

    unanswerable = [q for q in dataset.queries if not dataset.answers.get(q)]
    # built before the ingest, so that a judge model the server does not have fails at once
    judging = Judge(await judge_model(settings, judge)) if judge else None
    try:
        async with eval_index(settings, dataset, keep_index, progress) as index:
            report = await _answer_all(index, progress, judging)
    finally:
        if judging is not None:
            await judging.aclose()
    if unanswerable:
        report.notices.append(f"{len(unanswerable)} judged queries have no reference answers and were skipped")
    return report


async def _answer_all(index: EvalIndex, progress: Progress, judge: Judge | None) -> AnswerReport:
    from ragtui.history import HistoryStore

    settings, dataset = index.workspace.settings, index.dataset
    qids = [q for q in dataset.queries if dataset.answers.get(q)]
    notices = list(index.notices)
    answered: list[AnsweredQuestion] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ragtui-eval-history-") as folder:
        history = HistoryStore(folder)
        for i, qid in enumerate(qids, start=1):
            one, texts = await _ask(index, history, qid, notices)
            if judge is not None:
                from ragtui.evaluation.judge import judge_answer

                one.statements, one.supported = await judge_answer(judge, one.answer, texts)
            answered.append(one)
            if i % 10 == 0 or i == len(qids):
                progress(f"answered {i}/{len(qids)} questions")
    if judge is not None:
        notices += judge.notices()
    per_query = {a.qid: a.scores(judged=judge is not None) for a in answered}
    return AnswerReport(
        dataset=dataset.name, queries=len(answered), documents=len(dataset.corpus), chunks=index.chunks,
        models={"synthesis": settings.llm.model,
                "annotator": settings.llm.annotator if settings.annotation.enabled else "off",
                "embeddings": ", ".join(settings.embed.all_models), **({"judge": judge.model.model} if judge else {})},
        settings=answer_settings(settings), results=summarise_answers(per_query), per_query=per_query,
        questions=[vars(a) for a in answered], notices=notices,
        timings_s={"ingest": index.ingest_s, "questions": round(time.perf_counter() - started, 1)})


async def _ask(index: EvalIndex, history: HistoryStore, qid: str,
               notices: list[str]) -> tuple[AnsweredQuestion, dict[int, str]]:
    """One question through a fresh session, metered, and the texts of its sources by number; a failed stage
    is the question's error, not the run's."""
    from ragtui.events import Notice, StageFailed
    from ragtui.llm.usage import metered
    from ragtui.research.session import ResearchSession

    dataset, workspace = index.dataset, index.workspace
    session = ResearchSession(workspace.settings, dataset.queries[qid], [index.name], history=history,
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
        qid=qid, question=dataset.queries[qid], references=list(dataset.answers[qid]), answer=turn.answer,
        relevant=relevant, retrieved=[s.number for s in turn.sources], kept=[s.number for s in turn.relevant],
        packed=list(turn.prompt_numbers), windowed=windowed, cited=list(turn.citations),
        claimless=turn.echo or turn.non_answer,
        quotes=len(checks), quotes_verified=sum(c.verified for c in checks),
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


