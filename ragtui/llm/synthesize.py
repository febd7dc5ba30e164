"""The synthesis prompt (RAGWeed 5): numbered, annotated sources and the instruction to cite them.

Sources keep the number they were given by rank before packing and the
lost-in-the-middle reordering, so the [N] in the prompt is the [N] the user sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ragtui.model import AnnotationState, SessionSource

SYSTEM_PROMPT = (
    "You are a careful research assistant. Answer the user's question using only the numbered sources "
    "you are given, never outside knowledge. Cite the source of every claim with its number in square "
    "brackets, like [2] or [1][3]. If the sources do not answer the question, say so plainly."
)
CONTINUE_PROMPT = (
    "Your answer was cut off. Continue it exactly where it stopped, without repeating anything you "
    "already wrote and without starting over. Keep citing sources as [N]."
)


def serialise(source: SessionSource) -> str:
    """`[N] SOURCE: collection/file [p.PAGE]`, then `ANNOTATION: ...` when there is one, then the text."""
    lines = [f"[{source.number}] SOURCE: {source.chunk.label}"]
    if source.state is AnnotationState.RELEVANT and source.annotation:
        lines.append("ANNOTATION: " + " ".join(source.annotation.split()))
    lines.append(source.chunk.text.strip())
    return "\n".join(lines)


def build_messages(query: str, ordered: Sequence[SessionSource]) -> list[tuple[str, str]]:
    """System instructions, then one user turn holding the sources (in prompt order) and the question."""
    context = "\n\n".join(serialise(s) for s in ordered)
    user = (f"SOURCES:\n\n{context}\n\n"
            f"QUESTION: {query}\n\n"
            "Answer from these sources only, citing them as [N].")
    return [("system", SYSTEM_PROMPT), ("user", user)]


def continue_messages(prompt: Sequence[tuple[str, str]], partial: str) -> list[tuple[str, str]]:
    """The original prompt, the partial answer as the assistant turn, and the request to go on."""
    return [*prompt, ("assistant", partial), ("user", CONTINUE_PROMPT)]


@dataclass(frozen=True)
class Plan:
    """What goes into the prompt: the packed sources in prompt order, and what did not fit."""

    ordered: list[SessionSource]
    left_out: list[SessionSource]
    shortened: int | None = None     # the source cut to fit when not even the best one fitted whole


MIN_SHORTENED_CHARS = 200


def plan(sources: Sequence[SessionSource], *, context_window: int, max_tokens: int, context_chunks: int) -> Plan:
    """Pack the synthesis set best first (RAGWeed 3g), then order it against lost-in-the-middle.

    When not even the best source fits whole (default 2,048-token chunks against an
    8,192-token window with 4,096 reserved for the answer), its opening is sent
    instead, cut to the budget, rather than no answer at all; the caller says so.
    """
    from ragtui.llm.packing import HEADER_TOKENS, context_budget, lost_in_the_middle, pack
    from ragtui.llm.tokens import CHARS_PER_TOKEN

    ranked = sorted(sources, key=lambda s: s.number)
    kept = pack(ranked, context_window=context_window, max_tokens=max_tokens, context_chunks=context_chunks)
    shortened = None
    if not kept and ranked:
        chars = int((context_budget(context_window, max_tokens) - HEADER_TOKENS) * CHARS_PER_TOKEN)
        if chars >= MIN_SHORTENED_CHARS:
            best = ranked[0]
            kept = [replace(best, chunk=replace(best.chunk, text=best.chunk.text[:chars]))]
            shortened = best.number
    kept_numbers = {s.number for s in kept}
    return Plan(ordered=lost_in_the_middle(kept), left_out=[s for s in ranked if s.number not in kept_numbers],
                shortened=shortened)

