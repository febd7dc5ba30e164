"""One turn's stages after retrieval: number the sources, annotate them, write the answer and stream it.

Every change goes through the session's `Ledger`, and every source whose state
changes is replaced there by a transition of `ragtui.model.conversation` before the
event that carries it is yielded. Cancelling the consuming task (or closing an
iterator) stops the LLM stream at once and leaves the record consistent: a cut
answer keeps its partial text with stop reason "cancelled"; a source whose
annotation a cancel cut keeps what it had before.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from ragtui.config import ConfigError, Settings
from ragtui.events import (
    AnnotationFailed,
    AnnotationFinished,
    AnnotationStarted,
    Event,
    Notice,
    SessionSaved,
    SourcesReady,
    Stage,
    StageFailed,
    SynthesisFinished,
    SynthesisStarted,
    SynthesisToken,
)
from ragtui.llm.chat import CallDropped, ChatModel, LLMError
from ragtui.llm.repetition import Repetition, RepetitionWatch, repeat_at_cut
from ragtui.llm.synthesize import Plan
from ragtui.model import conversation as transitions
from ragtui.model.conversation import AnnotationState, SessionSource, StopReason, Turn
from ragtui.model.retrieval import Hit, RetrievalMeta
from ragtui.numbers import NumberCheck
from ragtui.quotes import QuoteCheck
from ragtui.research.chat_clients import ChatClients
from ragtui.research.ledger import Ledger

if TYPE_CHECKING:
    from ragtui.llm.annotate import Lowered


class TurnStages:
    """The stages of the latest turn, over the session's ledger and models."""

    def __init__(self, settings: Settings, ledger: Ledger, models: ChatClients,
                 topic: Callable[[str], str] = lambda name: "") -> None:
        """`topic`: what a collection is about (its `--topic`; "" for none), told to the annotator and the
        answer."""
        self.settings = settings
        self.ledger = ledger
        self.models = models
        self.topic = topic
        self.packing: Plan | None = None      # the last synthesis prompt's packing (not kept in the history)
        # annotation calls in flight at once: annotation.concurrency, lowered for the rest of the session when
        # the server keeps cutting streams while several are in flight
        self.concurrency = settings.annotation.concurrency

    # --- the whole turn -----------------------------------------------------------------

    async def answer(self, hits: Sequence[Hit], notices: Sequence[str], llm_problem: str,
                     llm_stage: Stage, *, synthesize: bool = True) -> AsyncGenerator[Event, None]:
        """Number the latest turn's sources after every earlier turn's, then annotate and (unless `synthesize` is
        False: a research run's search) synthesize."""
        conversation = self.ledger.conversation
        base = conversation.next_number()
        numbers = {(h.chunk.meta.collection, h.chunk.id): base + i for i, h in enumerate(hits)}
        state = AnnotationState.PENDING if conversation.annotation_on and not llm_problem else AnnotationState.OFF
        turn = self.ledger.change_turn(sources=tuple(
            SessionSource(number=base + i, chunk=hit.chunk, score=hit.score, rel_score=hit.rel_score,
                          legs=tuple(hit.legs), state=state, evidence=hit.evidence, distance=hit.distance,
                          neighbor_of=numbers.get((hit.chunk.meta.collection, hit.neighbor_of), 0)
                          if hit.neighbor_of else 0)
            for i, hit in enumerate(hits)))
        self.ledger.save()
        yield SourcesReady(turn.sources, turn.retrieval_meta or RetrievalMeta(), turn.keyword_only,
                           turn=len(self.ledger.conversation.turns))
        for notice in notices:
            yield Notice("warning", notice)
        if not turn.sources:
            yield Notice("warning", f"no sources found for {turn.query!r} in "
                                    f"{', '.join(conversation.collections)}; nothing to annotate or answer from")
            yield self.saved()
            return
        if llm_problem and not self.models.configured:       # expected (the demo without Ollama): said calmly
            yield Notice("info", "No chat model configured: sources only (set [llm] model to annotate and answer).")
            yield self.saved()
            return
        if llm_problem:
            yield self.fail(llm_stage, f"{llm_problem}. Sources only: no annotation and no answer.")
            return
        if conversation.annotation_on:
            async with aclosing(self.annotate([s.number for s in turn.sources], model=None,
                                              prompt_file=None)) as events:
                async for event in events:
                    yield event
            if self.ledger.turn.error:
                return
        if not synthesize:
            yield self.saved()
            return
        async with aclosing(self.synthesize()) as events:
            async for event in events:
                yield event

    # --- annotation ---------------------------------------------------------------------

    async def annotate(self, targets: Sequence[int], *, model: str | None,
                       prompt_file: str | Path | None) -> AsyncGenerator[Event, None]:
        from ragtui.llm.annotate import load_template

        prompt_path = self.settings.annotation.prompt_file if prompt_file is None else prompt_file
        try:
            template = load_template(prompt_path)
            llm = await self.models.annotation_model(model)
        except (ConfigError, LLMError) as exc:
            yield self.fail("annotate", str(exc))     # earlier annotations stay as they were
            return
        conversation = self.ledger.conversation
        before = {n: conversation.source(n) for n in targets}   # what a cancel puts back
        started = time.perf_counter()
        try:
            for number, turn in enumerate(conversation.turns, start=1):   # each against its own turn's question
                mine = [n for n in targets if any(s.number == n for s in turn.sources)]
                if mine:
                    async with aclosing(self._annotate_turn(number, mine, llm, template,
                                                            str(prompt_path or ""))) as events:
                        async for event in events:
                            yield event
        finally:
            for n in targets:
                self.ledger.put(transitions.cut(self.ledger.conversation.source(n), before[n]))
            self.ledger.time("annotate_s", time.perf_counter() - started)
            if len(targets) == len(self.ledger.turn.sources):
                self.ledger.change(annotation_model=llm.model)
            if llm is not self.models.annotator:
                await llm.aclose()
            self.ledger.save()

    async def _annotate_turn(self, turn: int, targets: Sequence[int], llm: ChatModel, template: str,
                             prompt: str) -> AsyncGenerator[Event, None]:
        """Annotate these sources of turn `turn` (1-based) against what the user asked
        (`Conversation.annotation_query`)."""
        from ragtui.llm.annotate import Answered, Lowered, Retried, Started, annotate_sources

        ledger = self.ledger
        texts = [(n, ledger.put(transitions.queued(ledger.conversation.source(n))).chunk.text) for n in targets]
        topics = {n: self.topic(ledger.conversation.source(n).chunk.meta.collection) for n in targets}
        calls = annotate_sources(llm, texts, query=ledger.conversation.annotation_query(turn), template=template,
                                 irrelevant_marker=self.settings.annotation.irrelevant_marker,
                                 concurrency=self.concurrency, backoff=self.settings.llm.backoff, topics=topics)
        try:
            async for outcome in calls:
                if isinstance(outcome, Lowered):
                    self.concurrency = outcome.to
                    yield Notice("warning", lowered_line(llm.model, outcome))
                    continue
                if isinstance(outcome, Retried):
                    yield Notice("info", outcome.retry.line(f"the annotation of [{outcome.number}]"))
                    continue
                source = ledger.conversation.source(outcome.number)
                if isinstance(outcome, Started):
                    yield AnnotationStarted(ledger.put(transitions.annotating(source)))
                elif isinstance(outcome, Answered):
                    yield AnnotationFinished(ledger.put(transitions.annotated(
                        source, outcome.text, relevant=outcome.relevant, by=llm.model, prompt=prompt)))
                else:
                    yield AnnotationFailed(ledger.put(transitions.annotation_failed(source, outcome.error)))
        finally:
            await calls.aclose()

    # --- synthesis ----------------------------------------------------------------------

    async def synthesize(self) -> AsyncGenerator[Event, None]:
        """A fresh answer to the latest turn from its current Relevant set, with the earlier turns' questions and
        answers as conversation context."""
        from ragtui.llm.packing import CONVERSATION_SHARE, context_budget, fit_conversation
        from ragtui.llm.synthesize import build_messages, plan

        turn = self.ledger.turn
        chosen = list(self.ledger.conversation.answer_sources)
        research = self.ledger.conversation.research
        parts = [sub.text for sub in research.plan] if self.ledger.conversation.is_report and research else []
        if not chosen:
            failures = sum(s.state is AnnotationState.FAILED for s in turn.sources)
            yield self.fail("synthesize", "no relevant sources to answer from"
                            + (f" ({failures} annotation(s) failed)" if failures else "")
                            + "; rescue a filtered source or re-annotate")
            return
        try:
            model = await self.models.synthesis_model()
        except (ConfigError, LLMError) as exc:
            yield self.fail("synthesize", str(exc))
            return
        conversation = self.earlier_answers()
        llm = self.settings.llm
        budget = context_budget(model.context_window, llm.max_tokens) // CONVERSATION_SHARE
        kept, used = fit_conversation([pair for _, pair in conversation], max(budget, 0))
        left = [conversation[i] for i in range(len(conversation)) if i not in kept]
        if left:
            yield Notice("info", f"earlier turn(s) {', '.join(str(n) for n, _ in left)} did not fit the context "
                                 "budget with their answers; only their questions are named in the prompt")
        packed = plan(chosen, query=turn.query, context_window=model.context_window - used,
                      max_tokens=llm.max_tokens, context_chunks=llm.context_chunks,
                      every_source=llm.packing == "every-source")
        self.packing = packed
        failed = [s.number for s in turn.sources if s.state is AnnotationState.FAILED and not s.relevant]
        if failed:
            yield Notice("warning", f"left out {len(failed)} source(s) whose annotation failed: "
                                    f"{_numbers(failed)}; rescue them to include them")
        if packed.windows:
            yield Notice("info", f"{len(packed.windows)} source(s) too long for the room left were sent as their "
                                 f"most relevant part: {_numbers(sorted(packed.windows))}")
        if packed.left_out:
            chosen_by = "kept by the annotator" if self.settings.annotation.enabled else "retrieved"
            yield Notice("warning", f"{len(packed.left_out)} source(s) {chosen_by} did not fit the context window "
                                    f"({model.context_window} tokens, llm.max_tokens {llm.max_tokens},"
                                    f" llm.context_chunks {llm.context_chunks}): "
                                    f"{_numbers([s.number for s in packed.left_out])}")
        if not packed.ordered:
            yield self.fail("synthesize", f"no source fits the context window of {model.context_window} tokens "
                                          f"with llm.max_tokens = {llm.max_tokens}")
            return
        turn = self.ledger.change_turn(
            prompt=tuple(build_messages(turn.query, packed.ordered, conversation=[conversation[i][1] for i in kept],
                                        earlier=[question for _, (question, _) in left], parts=parts,
                                        topics={s.chunk.meta.collection: self.topic(s.chunk.meta.collection)
                                                for s in packed.ordered})),
            context_turns=tuple(conversation[i][0] for i in kept),
            prompt_numbers=tuple(sorted(s.number for s in packed.ordered)),
            answer="", continuations=0, error="")
        async with aclosing(self._stream(model, list(turn.prompt), continuation=False)) as events:
            async for event in events:
                yield event

    async def continue_answer(self) -> AsyncGenerator[Event, None]:
        """Send the partial answer back as the assistant turn and ask for the rest; join without seams."""
        from ragtui.llm.synthesize import continue_messages

        refusal = self.ledger.turn.continue_refusal
        if refusal:
            yield Notice("info", refusal)
            return
        try:
            model = await self.models.synthesis_model()
        except (ConfigError, LLMError) as exc:
            yield self.fail("synthesize", str(exc))
            return
        turn = self.ledger.change_turn(continuations=self.ledger.turn.continuations + 1)
        async with aclosing(self._stream(model, continue_messages(list(turn.prompt), turn.answer),
                                         continuation=True)) as events:
            async for event in events:
                yield event

    async def _stream(self, model: ChatModel, messages: list[tuple[str, str]], *,
                      continuation: bool) -> AsyncGenerator[Event, None]:
        from ragtui.llm import retries
        from ragtui.llm.continuation import SeamBuffer

        ledger, packing = self.ledger, self.packing
        yield SynthesisStarted(model.model, ledger.turn.prompt_numbers, continuation,
                               windowed=tuple(sorted(packing.windows)) if packing else (),
                               left_out=tuple(s.number for s in packing.left_out) if packing else ())
        seam = SeamBuffer(ledger.turn.answer) if continuation else None
        before = len(ledger.turn.answer)
        ledger.change_turn(stop_reason=StopReason.NONE)
        started = time.perf_counter()
        reason = StopReason.CANCELLED
        watch = _LoopWatch(ledger.turn.answer)
        loop: Repetition | None = None
        at_cut = False
        model = await self.models.fitted(model, messages)
        deltas = retries.stream(model, messages, self.settings.llm.backoff)
        try:
            try:
                async for delta in deltas:
                    if isinstance(delta, retries.Retrying):
                        yield Notice("warning", delta.line(f"the answer from {model.model}"))
                        continue
                    text = seam.feed(delta.text) if seam else delta.text
                    if delta.stop_reason is not None and seam:
                        text += seam.finish()
                    if text and (loop := watch.feed(text)):
                        text = text[:max(watch.keep(loop) - len(ledger.turn.answer), 0)]
                    if text:
                        ledger.change_turn(answer=ledger.turn.answer + text)
                        yield SynthesisToken(text)
                    if loop:
                        ledger.change_turn(answer=ledger.turn.answer[:max(watch.keep(loop), before)])
                        reason = StopReason.REPETITION
                        break                   # closing the stream (finally) stops the model writing
                    if delta.stop_reason is not None:
                        reason = delta.stop_reason
                if reason is StopReason.LENGTH and (loop := repeat_at_cut(ledger.turn.answer)):
                    ledger.change_turn(answer=ledger.turn.answer[:max(loop.keep, before)])
                    reason = StopReason.REPETITION       # cut at the token limit inside a loop
                    at_cut = True
            except LLMError as exc:
                reason = StopReason.ERROR
                error = str(exc)
                if isinstance(exc, CallDropped) and len(ledger.turn.answer) > before:
                    error += ("; the text so far is kept, not asked for again (it would be written twice): "
                              "synthesize again for a whole answer")
                ledger.change_turn(error=error)
                yield StageFailed("synthesize", error)
            if not continuation and not ledger.turn.answer.strip() and reason not in (StopReason.CANCELLED,
                                                                                      StopReason.ERROR):
                turn = ledger.change_turn(error=empty_answer_message(model.model, reason))
                reason = StopReason.ERROR
                yield StageFailed("synthesize", turn.error)
        finally:
            await deltas.aclose()
            ledger.time("continue_s" if continuation else "synthesize_s", time.perf_counter() - started)
            self._finish_answer(reason)
            ledger.save()
        turn = ledger.turn
        if loop:
            yield Notice("warning", repetition_message(model.model, loop, at_cut=at_cut))
        if seam and seam.repeated:
            yield Notice("warning", f"{model.model} began its continuation by writing the answer's last paragraph "
                                    "again; that copy was dropped"
                                    + ("" if len(turn.answer) > before else ", and nothing new was written"))
        elif continuation and len(turn.answer) == before and reason not in (StopReason.CANCELLED,
                                                                            StopReason.REPETITION):
            yield Notice("warning", f"{model.model} repeated its answer instead of continuing it; nothing new "
                                    "was added (re-synthesize)")
        yield SynthesisFinished(turn.answer, reason, turn.citations, turn.unknown_citations, self.quote_checks(),
                                echo=turn.echo, non_answer=turn.non_answer, numbers=self.number_checks())
        yield self.saved()

    def _finish_answer(self, reason: StopReason) -> None:
        from ragtui.llm.citations import check_citations

        turn = self.ledger.turn
        found = check_citations(turn.answer, set(turn.prompt_numbers), [text for _, text in turn.prompt])
        self.ledger.change_turn(stop_reason=reason, citations=tuple(found.cited),
                                unknown_citations=tuple(found.unknown))

    def quote_checks(self, turn: Turn | None = None) -> tuple[QuoteCheck, ...]:
        """The quotes a turn's answer (the latest's by default) attributes to sources, each looked up in every
        source of the session: a quote its cited source does not hold is unverified (`ragtui.quotes`).
        Computed from the stored answer and chunk texts, so a reopened session is checked the same way."""
        from ragtui.llm.citations import quote_checks

        conversation = self.ledger.conversation
        turn = turn or conversation.turn
        return quote_checks(turn.answer, {s.number: s.chunk.text for s in conversation.all_sources})

    def number_checks(self, turn: Turn | None = None) -> tuple[NumberCheck, ...]:
        """The numbers a turn's answer (the latest's by default) states that the sources its sentences cite do
        not hold (`ragtui.numbers`); computed from what history stores, as `quote_checks` is."""
        from ragtui.llm.citations import number_checks

        conversation = self.ledger.conversation
        turn = turn or conversation.turn
        return number_checks(turn.answer, {s.number: s.chunk.text for s in conversation.all_sources})

    def earlier_answers(self) -> list[tuple[int, tuple[str, str]]]:
        """The earlier turns that have an answer: (turn number, (question, answer))."""
        return [(i, (t.query, t.answer)) for i, t in enumerate(self.ledger.conversation.turns[:-1], start=1)
                if t.answer.strip()]

    # --- helpers ------------------------------------------------------------------------

    def fail(self, stage: Stage, message: str) -> StageFailed:
        self.ledger.change_turn(error=message)
        self.ledger.save()
        return StageFailed(stage, message)

    def saved(self) -> SessionSaved:
        self.ledger.save()
        conversation = self.ledger.conversation
        return SessionSaved(conversation.id or 0, MappingProxyType(dict(conversation.turn.timings)),
                            not_saved=self.ledger.not_saved)


def _numbers(numbers: Sequence[int]) -> str:
    return " ".join(f"[{n}]" for n in numbers)


class _LoopWatch:
    """A `RepetitionWatch` over the whole answer, the part a continuation extends included (a loop may span the
    seam); an answer that already loops before this stream (stored by an older ragtui) is not watched again."""

    def __init__(self, answer: str) -> None:
        self.watch = RepetitionWatch()
        self.base = 0                     # where the watched text starts in the answer
        if answer and self.watch.feed(answer):
            self.watch, self.base = RepetitionWatch(), len(answer)

    def feed(self, text: str) -> Repetition | None:
        return self.watch.feed(text)

    def keep(self, loop: Repetition) -> int:
        """How much of the answer to keep: up to the end of the loop's first copy."""
        return self.base + loop.keep


def repetition_message(model: str, loop: Repetition, *, at_cut: bool = False) -> str:
    """What the user is told when a looping answer is stopped, or found looping where llm.max_tokens cut it
    (`at_cut`): never to raise llm.max_tokens, which only buys more copies."""
    block = loop.block if len(loop.block) <= 80 else loop.block[:79] + "…"
    stopped = ("it was looping when llm.max_tokens cut it; the repeats were dropped" if at_cut
               else "the answer was stopped there and the repeats dropped")
    return (f"{model} began repeating itself ({loop.copies} copies of {block!r}): {stopped}. It is not offered "
            "for continue, which would loop again; synthesize again or try another model (llm.model)")


def lowered_line(model: str, lowered: Lowered) -> str:
    """The one notice that annotation calls now go fewer at a time, naming the setting to change."""
    from ragtui.model_ids import short_name

    return (f"annotation streams from {short_name(model)} were cut while others were in flight; annotating "
            f"{'one source' if lowered.to == 1 else f'{lowered.to} sources'} at a time for the rest of this session "
            f"(annotation.concurrency {lowered.was} -> {lowered.to}; set it to 1 for a server that answers one "
            "request at a time)")


def empty_answer_message(model: str, reason: StopReason) -> str:
    """Why an answer is missing when the model said it was done: a blank pane alone would look like a hang."""
    said = f" (stop reason {reason.value!r})" if reason.value else ""
    return (f"{model} finished without writing an answer{said}; ask again, or try another model "
            "(llm.model)")
