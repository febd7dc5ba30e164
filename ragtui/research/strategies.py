"""The retrieval strategies around one question's search ([strategies]): what they ask the model, which
searches they run, and how the runs are fused.

    retrieval = await search(settings, question, run, most=settings.retrieve.annotate_max)

`run(text, embed)` is one retrieval (the product's `pipeline.retrieve`, or evaluation's unprocessed ranking);
`embed` replaces its query embedding when given (HyDE). In order:

- HyDE ("on"): the model writes `hyde_prompts` passages that would answer the question, one per prompt; the
  typed question's run searches the vector leg with the mean of their embeddings and the question's
  (retrieve/hyde.py). "adaptive": the typed run first, and the HyDE run instead of it only when the typed
  run's best cosine is below `hyde_below`.
- fragments: each part of a question of several (retrieve/fragments.py) is searched too.
- multi-query: the model writes `multi_query` differently worded queries, each searched too.
- sentence window: the question's best sentences, each with `sentence_window` sentences either side, as
  their chunks (`sentences`, retrieve/sentence_window.py; not given for a vector-only search).

The extra runs are fused with the typed one by RRF (retrieve/runs.py, the follow-up's fusion). Every model
call is bounded (strategies.timeout_s for the whole call, strategies.max_tokens of output); a failed,
timed-out, refusing or junk reply falls back to the question as typed, with a notice saying so. What ran and
what it cost (model calls, seconds, searches) is the retrieval meta's `strategies`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ragtui.config import ConfigError, Settings
from ragtui.llm.chat import ChatModel, LLMError, Messages
from ragtui.model.retrieval import Retrieval, StrategyMeta

if TYPE_CHECKING:
    from ragtui.retrieve.hybrid_retriever import QueryEmbedder

Run = Callable[[str, "QueryEmbedder | None"], Awaitable[Retrieval]]
SentenceRun = Callable[[str], Awaitable[Retrieval]]


async def search(settings: Settings, query: str, run: Run, *, most: int, embed: QueryEmbedder | None = None,
                 vectors: bool = True, sentences: SentenceRun | None = None) -> Retrieval:
    """`query` searched with the strategies that are on, the runs fused to at most `most` hits (see the module
    docstring). `embed` is the question's embedder (default: the configured server's); `vectors` = False (a
    keyword-only search) leaves HyDE out; `sentences` is the sentence-window search."""
    from ragtui.retrieve.hybrid_retriever import embed_query

    strategies = settings.strategies
    if not strategies.active:
        return await run(query, None)
    asker = _Asker(settings)
    try:
        typed, hyde = await _typed_run(settings, query, run, asker, embed or embed_query, vectors)
        extra = await _extra_queries(settings, query, asker)
        runs = [("query", typed), *[(name, await run(text, None)) for name, text in extra]]
        if sentences is not None and strategies.sentence_window:
            asker.ran.append("sentence-window")
            runs.append(("sentences", await sentences(query)))
    finally:
        await asker.aclose()
    meta = StrategyMeta(strategies=tuple(asker.ran), queries=tuple(text for _, text in extra),
                        hyde_passages=hyde.passages, best_vector=hyde.best, llm_calls=asker.calls,
                        llm_s=round(asker.seconds, 3), searches=hyde.searches + len(runs) - 1,
                        fallbacks=tuple(asker.fallbacks))
    from ragtui.retrieve.runs import fuse_runs, fused_notices

    hits = typed.hits
    if len(runs) > 1:
        hits = fuse_runs([(name, r.hits) for name, r in runs], settings.retrieve.rrf_k, most)
    notices = list(dict.fromkeys([*fused_notices([r for _, r in runs], hits), *asker.notices]))
    return replace(typed, hits=hits, notices=notices, keyword_only=any(r.keyword_only for _, r in runs),
                   meta=replace(typed.meta, strategies=meta), nothing_found="" if hits else typed.nothing_found)


@dataclass
class _Hyde:
    passages: tuple[str, ...] = ()
    best: float | None = None
    searches: int = 1


class _Asker:
    """The strategies' model, opened on first use: each call bounded and counted, each fallback said once. After
    a timeout or a configuration error no later call is made: each fails at once with the same reason."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.model: ChatModel | None = None
        self.calls = 0
        self.seconds = 0.0
        self.ran: list[str] = []
        self.fallbacks: list[str] = []
        self.notices: list[str] = []
        self._broken = ""

    async def ask(self, messages: Messages) -> str:
        """The model's reply; LLMError when there is none within strategies.timeout_s (or no model)."""
        if self._broken:
            raise LLMError(self._broken)
        timeout = self.settings.strategies.timeout_s
        started = time.perf_counter()
        try:
            if self.model is None:
                from ragtui.llm.providers import strategy_model

                self.model = await asyncio.wait_for(strategy_model(self.settings), timeout)
            self.calls += 1
            text, _ = await asyncio.wait_for(self.model.complete(messages), timeout)
            return text
        except TimeoutError:             # a model this slow would make each later call wait as long again
            self._broken = f"no reply from {self.settings.llm.model} within strategies.timeout_s = {timeout:g} s"
            raise LLMError(self._broken) from None
        except ConfigError as exc:       # llm.model unset: every later call would fail the same way
            self._broken = str(exc)
            raise LLMError(self._broken) from None
        finally:
            self.seconds += time.perf_counter() - started

    def fell_back(self, strategy: str, why: str, instead: str) -> None:
        self.fallbacks.append(f"{strategy}: {why}")
        self.notices.append(f"{strategy} was not used ({why}); {instead}.")

    async def aclose(self) -> None:
        if self.model is not None:
            await self.model.aclose()


async def _typed_run(settings: Settings, query: str, run: Run, asker: _Asker, embed: QueryEmbedder,
                     vectors: bool) -> tuple[Retrieval, _Hyde]:
    """The question as typed, its vector leg steered by HyDE passages when HyDE is on (or adaptive and the
    plain run's best cosine is below strategies.hyde_below)."""
    from ragtui.retrieve.hyde import best_vector, hyde_embedder

    mode = settings.strategies.hyde if vectors else "off"
    hyde = _Hyde()
    typed = None
    if mode == "adaptive":
        typed = await run(query, None)
        hyde.best = round(best_vector(typed.hits), 4)
        if typed.keyword_only or hyde.best >= settings.strategies.hyde_below:
            return typed, hyde
    if mode != "off":
        asker.ran.append("hyde")
        hyde.passages = tuple(await _passages(settings, query, asker))
        if hyde.passages:
            hyde.searches += typed is not None
            return await run(query, hyde_embedder(embed, hyde.passages)), hyde
    return typed or await run(query, None), hyde


async def _passages(settings: Settings, query: str, asker: _Asker) -> list[str]:
    """The usable hypothetical passages, one per prompt; a fallback notice when none is."""
    from ragtui.llm.query_variants import clean_passage, hyde_messages

    passages, reasons = [], []
    for prompt in range(settings.strategies.hyde_prompts):
        try:
            text, why = clean_passage(await asker.ask(hyde_messages(query, prompt)), query)
        except LLMError as exc:
            text, why = "", str(exc)
        if text:
            passages.append(text)
        else:
            reasons.append(why)
    if not passages:
        asker.fell_back("HyDE", f"no usable passage: {reasons[0]}", "the vector leg searched the question as typed")
    return passages


async def _extra_queries(settings: Settings, query: str, asker: _Asker) -> list[tuple[str, str]]:
    """(run name, text) of the fragments and the model's alternative queries, the question excluded."""
    from ragtui.retrieve.fragments import query_fragments

    extra: list[tuple[str, str]] = []
    if settings.strategies.fragments:
        asker.ran.append("fragments")
        extra += [(f"fragment {i}", text) for i, text in enumerate(query_fragments(query), start=1)]
    n = settings.strategies.multi_query
    if n:
        from ragtui.llm.query_variants import clean_queries, multi_query_messages

        asker.ran.append("multi-query")
        try:
            queries, why = clean_queries(await asker.ask(multi_query_messages(query, n)), query, n)
        except LLMError as exc:
            queries, why = [], str(exc)
        if why:
            asker.fell_back("multi-query", f"no usable query: {why}", "searched without alternative queries")
        extra += [(f"variant {i}", text) for i, text in enumerate(queries, start=1)]
    return extra
