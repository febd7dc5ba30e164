"""`ragtui eval --answers --models A B ...`: the same questions through several chat models, one grounding table.

The corpus is ingested once (`runner.eval_index`); each model then answers every
question exactly as `eval --answers` asks them (`answers.answer_all`), with the same
retrieval and the same settings except `llm.model` (so the annotator is that model
too, unless `llm.annotation_model` pins one). A model written `NAME@URL` is served by
the OpenAI-compatible server at URL (its `/v1` base, as `[llm] base_url`), so a
model on llama.cpp's server can be set beside one on Ollama.

Each model's row holds the grounding metrics (`SCOREBOARD_METRICS`) as mean and 95%
bootstrap CI; every pair of models has the paired bootstrap CI of the difference,
over the same questions (`answer_metrics.compare_answers`): what varies between
questions cancels, so the CI is that of the models' difference itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ragtui.config import Settings
from ragtui.errors import RagtuiError
from ragtui.evaluation.answers import Progress, answer_all, answer_settings
from ragtui.evaluation.beir import Dataset

# the columns of the table, in order: what a researcher choosing a model for honest citations reads
SCOREBOARD_METRICS = ("quotes_verified", "quotes_misattributed", "numbers_unsupported", "citation_precision",
                      "no_citation", "echo", "abstention", "false_abstention", "seconds", "tokens")


@dataclass(frozen=True)
class ModelEntry:
    label: str            # as given on the command line
    name: str             # the model id sent to the server
    base_url: str = ""    # an OpenAI-compatible server's base; "" for the configured server


def parse_models(entries: list[str]) -> list[ModelEntry]:
    """`NAME` or `NAME@URL` per entry; two entries naming the same model are one usage error."""
    out = []
    for entry in entries:
        name, at, url = entry.partition("@")
        if not name.strip() or (at and not url.startswith(("http://", "https://"))):
            raise RagtuiError(f"--models {entry!r}: expected MODEL or MODEL@http://HOST:PORT/v1", exit_code=2)
        out.append(ModelEntry(entry, name.strip(), url.rstrip("/")))
    if len({e.label for e in out}) != len(out):
        raise RagtuiError("--models names the same model twice", exit_code=2)
    if len(out) < 2:
        raise RagtuiError("--models compares two models or more", exit_code=2)
    return out


def model_settings(settings: Settings, entry: ModelEntry) -> Settings:
    """`settings` with `entry` as the chat model (on its own server when it names one). A key belongs to its server:
    llm.api_key goes only to the configured llm.base_url, never to another URL given here. A model on another
    server annotates for itself: the annotator `llm.annotation_model` pins is a model of the configured server,
    which that server does not have."""
    if not entry.base_url:
        return settings.replace(llm__model=entry.name)
    own = settings.llm.provider == "openai" and entry.base_url == settings.llm.base_url.rstrip("/")
    return settings.replace(llm__provider="openai", llm__base_url=entry.base_url, llm__model=entry.name,
                            llm__annotation_model="", **({} if own else {"llm__api_key": ""}))


@dataclass
class Scoreboard:
    dataset: str
    queries: int
    unanswerable: int
    documents: int
    chunks: int
    models: list[str]                                           # labels, in the order given
    settings: dict[str, Any]
    results: dict[str, dict[str, dict[str, Any]]]               # model -> metric -> mean, ci_low, ci_high, n
    comparisons: dict[str, dict[str, dict[str, float]]]         # "B vs A" -> metric -> diff, CI, b_wins, n
    per_query: dict[str, dict[str, dict[str, float | None]]]    # model -> question -> metric -> value
    questions: dict[str, list[dict[str, Any]]]                  # model -> what each question's run produced
    annotators: dict[str, str] = field(default_factory=dict)    # model -> the annotator it ran with
    timings_s: dict[str, float] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    kind: str = "scoreboard"


async def run_scoreboard(settings: Settings, dataset: Dataset, models: list[ModelEntry], *,
                         progress: Progress = lambda _: None, keep_index: bool = False) -> Scoreboard:
    """Ingest once (or reuse a kept index), then every question through each model in turn, scored and paired."""
    from ragtui.evaluation.answer_metrics import compare_answers
    from ragtui.evaluation.runner import eval_index
    from ragtui.llm.providers import served_window

    for entry in models:      # a model no server has fails here, before the ingest
        await served_window(model_settings(settings, entry), entry.name, "--models")
    reports = {}
    async with eval_index(settings, dataset, keep_index, progress) as index:
        for entry in models:
            progress(f"model {entry.label}")
            started = time.perf_counter()
            chosen = model_settings(index.workspace.settings, entry)
            reports[entry.label] = (await answer_all(index, progress, settings=chosen), chosen,
                                    round(time.perf_counter() - started, 1))
        ingest_s, chunks = index.ingest_s, index.chunks
    first = next(iter(reports.values()))[0]
    notices = list(first.notices)
    for label, (report, _, _) in reports.items():
        notices += [f"{label}: {n}" for n in report.notices if n not in first.notices]
    labels = [e.label for e in models]
    per_query = {label: reports[label][0].per_query for label in labels}
    return Scoreboard(
        dataset=dataset.name, queries=first.queries, unanswerable=first.unanswerable, documents=first.documents,
        chunks=chunks, models=labels, settings=answer_settings(settings),
        results={label: {m: r for m, r in reports[label][0].results.items() if m in SCOREBOARD_METRICS}
                 for label in labels},
        comparisons={f"{b} vs {a}": {m: d for m, d in compare_answers(per_query[a], per_query[b]).items()
                                     if m in SCOREBOARD_METRICS}
                     for i, a in enumerate(labels) for b in labels[i + 1:]},
        per_query=per_query, questions={label: reports[label][0].questions for label in labels},
        annotators={label: reports[label][1].llm.annotator if reports[label][1].annotation.enabled else "off"
                    for label in labels},
        timings_s={"ingest": ingest_s, **{label: reports[label][2] for label in labels}}, notices=notices)
