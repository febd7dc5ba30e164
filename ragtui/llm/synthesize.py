"""The synthesis prompt: numbered, annotated sources and the instruction to cite them.

Sources keep the number they were given by rank before packing and the
lost-in-the-middle reordering, so the [N] in the prompt is the [N] the user sees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ragtui.llm.fencing import FENCE_RULE, fence, fold_line
from ragtui.model.conversation import AnnotationState, SessionSource, by_evidence

SYSTEM_PROMPT = (
    "You are a careful research assistant. Answer the user's question using only the numbered sources "
    "you are given, never outside knowledge. Cite the source of every claim with its number in square "
    "brackets, like [2] or [1][3]. When you quote a source, quote its words exactly. If the sources do not "
    "answer the question, say so plainly. Each source is a header line `[N] SOURCE: name`, perhaps an "
    "`ANNOTATION:` line, then its fenced text. " + FENCE_RULE
)
CONTINUE_PROMPT = (
    "Your answer was cut off. Continue it exactly where it stopped, without repeating anything you "
    "already wrote and without starting over. Keep citing sources as [N]."
)


def serialise(source: SessionSource) -> str:
    """`[N] SOURCE: collection/file [p.PAGE]`, then `ANNOTATION: ...` when there is one, then the fenced text.

    The label and annotation are folded onto their one line: a file name with a line break is untrusted too."""
    lines = [f"[{source.number}] SOURCE: " + fold_line(source.chunk.label)]
    if source.state is AnnotationState.RELEVANT and source.annotation:
        lines.append("ANNOTATION: " + fold_line(source.annotation))
    lines.append(fence(source.chunk.text.strip()))
    return "\n".join(lines)


FOLLOW_UP_NOTE = (
    " This is a follow-up in a conversation: the earlier questions and answers come first, for context only. "
    "Their citations name earlier sources; cite only the numbered sources given with the last question."
)


def build_messages(query: str, ordered: Sequence[SessionSource], *,
                   conversation: Sequence[tuple[str, str]] = (),
                   earlier: Sequence[str] = (), topics: Mapping[str, str] | None = None,
                   parts: Sequence[str] = ()) -> list[tuple[str, str]]:
    """System instructions, the earlier turns (whole question/answer pairs), then one user turn holding the
    sources (in prompt order) and the question. `earlier` lists questions whose answers did not fit: they
    are named in one line, a summary of where the conversation has been. `topics` (collection -> its
    `--topic`) says what the sources' collections are about, in one line before them. `parts`: a research
    run's sub-questions, which the report is organised by."""
    context = "\n\n".join(serialise(s) for s in ordered)
    before = ("EARLIER QUESTIONS (answers left out for space): " + " | ".join(earlier) + "\n\n") if earlier else ""
    named = dict.fromkeys(s.chunk.meta.collection for s in ordered)
    topics = topics or {}
    about = [f"{fold_line(name)}: {fold_line(topics[name])}" for name in named if topics.get(name)]
    if about:
        before += "THE SOURCES' COLLECTIONS ARE ABOUT: " + " | ".join(about) + "\n\n"
    organised = ("\n\nTHE QUESTION HAS THESE PARTS; write a report with one paragraph for each part, in this "
                 "order, then one that brings them together:\n"
                 + "\n".join(f"{i}. {fold_line(part)}" for i, part in enumerate(parts, start=1))) if parts else ""
    user = (f"{before}SOURCES:\n\n{context}\n\n"
            f"QUESTION: {query}{organised}\n\n"
            "Answer from these sources only, citing them as [N].")
    system = SYSTEM_PROMPT + (FOLLOW_UP_NOTE if conversation or earlier else "")
    messages: list[tuple[str, str]] = [("system", system)]
    for asked, answered in conversation:
        messages += [("user", asked), ("assistant", answered)]
    return [*messages, ("user", user)]


def continue_messages(prompt: Sequence[tuple[str, str]], partial: str) -> list[tuple[str, str]]:
    """The original prompt, the partial answer as the assistant turn, and the request to go on."""
    return [*prompt, ("assistant", partial), ("user", CONTINUE_PROMPT)]


@dataclass(frozen=True)
class Plan:
    """What goes into the prompt: the packed sources in prompt order, which of them are windows, what did not fit."""

    ordered: list[SessionSource]
    left_out: list[SessionSource]
    windows: dict[int, tuple[int, int]] = field(default_factory=dict)  # number -> (start, end) in the chunk's text


def plan(sources: Sequence[SessionSource], *, query: str, context_window: int, max_tokens: int,
         context_chunks: int, every_source: bool = False) -> Plan:
    """Pack the synthesis set best first, then order it against lost-in-the-middle.

    A source that does not fit whole is sent as its most relevant window (around
    the sentences that share the most words with the query) instead of being
    dropped; the window's span is kept so the caller can say so and show it. A
    source judged relevant by an annotation that quotes nothing of it
    (`SessionSource.unquoted`) is packed one place lower than its rank, never behind
    every quoted source (`by_evidence`), and sits just behind that source in the
    prompt's order too (`_prompt_score`).
    `every_source` shrinks the lower sources to windows so that all of them fit (`packing.pack`).
    """
    from ragtui.llm.packing import lost_in_the_middle, pack

    ranked = by_evidence(sources)    # by rank; a relevant source with no quote from it one place lower
    packed = pack(ranked, query=query, context_window=context_window, max_tokens=max_tokens,
                  context_chunks=context_chunks, every_source=every_source)
    kept = [s if span is None else replace(s, chunk=replace(s.chunk, text=s.chunk.text[span[0]:span[1]]))
            for s, span in packed]
    windows = {s.number: span for s, span in packed if span is not None}
    kept_numbers = {s.number for s in kept}
    return Plan(ordered=lost_in_the_middle(kept, _prompt_score(ranked)),
                left_out=[s for s in ranked if s.number not in kept_numbers], windows=windows)


def _prompt_score(ranked: Sequence[SessionSource]) -> Callable[[SessionSource], float]:
    """The score lost-in-the-middle orders the prompt by: the relative score (in [0, 1]), except that a source
    with no quote that `by_evidence` moved behind another scores just below that one."""
    scores: dict[int, float] = {}
    before: SessionSource | None = None
    for source in ranked:
        scores[source.number] = source.rel_score
        if source.unquoted and before is not None:
            scores[source.number] = min(source.rel_score, scores[before.number] - 1e-6)
        before = source
    return lambda s: scores[s.number]
