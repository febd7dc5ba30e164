"""`ragtui eval --from-history`: retrieval settings scored against the user's own judgments.

The qrels are the judgments of the saved sessions (`judgments.py`: rescued and cited chunks
relevant, the annotator's kept ones too with `weak`); the corpus is the user's collections
themselves, searched as `ragtui query` searches them and never written to. Each query searches
the collections its session searched (those of them named, when some are). A document is a
chunk (`judgments.chunk_key`); the ranking scored is the fused one, EVAL_TOP_K per leg, or with
`sources` what the question would annotate, as in `ragtui eval`. Judged chunks that are no
longer in their collection are left out of the scores and counted in a notice; so are queries
left with nothing relevant.

Only judged chunks can count as relevant: a setting that brings up chunks nobody judged scores
lower than it may deserve. The report says, per mode, how much of each query's top 10 was
judged (any grade), which is how far its figures can be trusted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence

from ragtui.config import Settings
from ragtui.evaluation.judgments import WEAK, Judgments, chunk_key, collect, conversations, missing
from ragtui.evaluation.runner import (
    EVAL_MODES,
    EvalReport,
    Progress,
    add_comparisons,
    few_queries,
    modes_to_run,
    ranked,
    retrieval_settings,
    score_modes,
)
from ragtui.model.retrieval import Mode

JUDGED_DEPTH = 10


async def run_history_eval(settings: Settings, collections: Sequence[str], modes: Sequence[str], *,
                           weak: bool = False, limit: int | None = None, sources: bool = False,
                           progress: Progress = lambda _: None, concurrency: int = 4,
                           compare_pairs: Sequence[tuple[str, str]] = ()) -> EvalReport:
    """Score every mode on the queries of the saved sessions (those that searched `collections`, all when
    none are named) against their judgments."""
    from ragtui.errors import RagtuiError
    from ragtui.library import Collection, CollectionError
    from ragtui.workspace import Workspace

    modes = modes_to_run(modes, compare_pairs)
    async with Workspace(settings) as workspace:
        judgments = collect(conversations(workspace.history, collections), collections)
        gone = await asyncio.to_thread(missing, workspace, judgments.used(weak))
        qrels = judgments.qrels(weak, leave_out=gone)
        if limit:
            qrels = dict(list(qrels.items())[:limit])
        if not qrels:
            raise RagtuiError(_nothing_to_score(judgments, collections, weak, len(gone)), exit_code=1)
        searched = list(dict.fromkeys(c for q in qrels for c in judgments.queries[q].collections))
        notices = _notices(judgments, weak, gone, qrels)
        opened: dict[str, Collection] = {}
        for name in searched:
            try:
                opened[name] = workspace.collection(name)
            except CollectionError as exc:
                notices.append(f"{exc}: not searched")
        chunks = sum(c.info().chunks for c in opened.values())
        judged: dict[str, set[str]] = {q: set() for q in qrels}      # any grade, in the collection still
        for j in judgments.used(weak):
            if j.query_id in judged and j.doc_id not in gone:
                judged[j.query_id].add(j.doc_id)
        runs: dict[tuple[Mode, bool], dict[str, list[str]]] = {}

        async def one(qid: str, mode: Mode, synonyms: bool) -> tuple[list[str], list[str], dict[str, float]]:
            query = judgments.queries[qid]
            ranking, found, cost = await ranked(settings, query.text,
                                          [opened[c] for c in query.collections if c in opened],
                                          lexicon=workspace.lexicon, mode=mode, synonyms=synonyms, sources=sources,
                                          key=chunk_key)
            runs.setdefault((mode, synonyms), {})[qid] = ranking
            return ranking, found, cost

        timings: dict[str, float] = {}
        t = time.perf_counter()
        progress(f"{len(qrels)} judged queries over {', '.join(searched)} ({chunks} chunks)")
        results, per_query, costs = await score_modes(modes, qrels, one, progress=progress,
                                                      concurrency=concurrency, timings=timings, notices=notices)
        timings["total"] = round(time.perf_counter() - t, 1)
    notices += [f"{name}: {judged_share(runs[EVAL_MODES[name]], judged):.0%} of each query's top "
                f"{JUDGED_DEPTH} on average was judged (the rest counts as not relevant)" for name in modes]
    report = EvalReport(
        dataset=f"your judgments in {', '.join(searched)}", queries=len(qrels),
        documents=sum(len(d) for d in judged.values()), chunks=chunks, models=settings.embed.all_models,
        results=results, per_query=per_query, costs=costs, timings_s=timings, notices=notices,
        settings={"scored": ("sources (what a question annotates)" if sources else "fused ranking") +
                  ", chunks of your collections judged in your sessions",
                  "labels": "rescued and cited 2, dropped 0" + (", annotator-kept 1, filtered 0 (weak)" if weak
                                                                 else "; weak labels left out"),
                  "judged": {kind.value: n for kind, n in judgments.counts().items()},
                  **{k: v for k, v in retrieval_settings(settings, sources).items() if not k.startswith("chunk.")}})
    add_comparisons(report, compare_pairs)
    return report


def judged_share(runs: Mapping[str, Sequence[str]], judged: Mapping[str, set[str]],
                 depth: int = JUDGED_DEPTH) -> float:
    """Mean over queries of the share of the top `depth` that was judged (a query with no results counts 1)."""
    shares = []
    for qid, ranking in runs.items():
        top = ranking[:depth]
        shares.append(sum(1 for d in top if d in judged[qid]) / len(top) if top else 1.0)
    return sum(shares) / len(shares) if shares else 1.0


def _notices(judgments: Judgments, weak: bool, gone: Mapping[str, str], qrels: Mapping[str, object]) -> list[str]:
    notices = few_queries(len(qrels))
    counts = judgments.counts()
    weak_count = sum(n for kind, n in counts.items() if kind in WEAK)
    if weak_count and not weak:
        notices.append(f"{weak_count} weak labels (the annotator's verdicts you may never have looked at) left "
                       "out; --weak counts them")
    elif weak_count:
        notices.append(f"{weak_count} of the judgments are weak labels: the annotator's verdicts, which you may "
                       "never have looked at")
    if gone:
        notices.append(f"{len(gone)} judged chunks are no longer in their collection and are left out "
                       "(`ragtui history judgments` lists them)")
    unscored = len({j.query_id for j in judgments.used(weak)} - set(qrels))
    if unscored:
        notices.append(f"{unscored} judged questions have no relevant chunk left (or beyond --limit) and are not "
                       "scored")
    return notices


def _nothing_to_score(judgments: Judgments, collections: Sequence[str], weak: bool, gone: int) -> str:
    where = f" that searched {', '.join(collections)}" if collections else ""
    if not judgments.sessions:
        return f"no saved session{where}: `ragtui ask` saves one per question"
    why = f"; {gone} judged chunks are no longer in their collection" if gone else ""
    hint = "" if weak else " (--weak also counts the annotator's kept sources)"
    return (f"nothing to score: {judgments.sessions} saved sessions{where} judge no chunk relevant{hint}{why}; "
            "rescue a source, or let an answer cite one, to make a judgment")
