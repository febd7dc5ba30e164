"""Fit retrieved sources into the LLM's context, then order them against "lost in the middle".

Synthesis calls `pack` on the relevant sources (best first), numbers what it keeps,
then calls `lost_in_the_middle` to decide where each source sits in the prompt.
A source too long for the room left is not dropped: its most relevant window
(`window.best_window`, the part the annotator read) goes in instead.
Both take any item type: pass `text=`/`score=` accessors, or rely on the defaults,
which understand `Hit`, `SessionSource` (anything with `.chunk`), `NodeWithScore` and `str`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ragtui.llm.window import WINDOW_CHARS, best_window
from ragtui.model.conversation import AnnotationState
from ragtui.tokens import CHARS_PER_TOKEN, PROMPT_OVERHEAD_TOKENS, estimate_tokens

T = TypeVar("T")
Span = tuple[int, int]

HEADER_TOKENS = 40              # "[N] SOURCE: collection/file [p.PAGE]" and annotation line
MIN_WINDOW_CHARS = 200          # less room than this for a window: the source is left out


def default_text(item: Any) -> str:
    """The text of a Hit/SessionSource (via `.chunk.text`), a NodeWithScore or TextNode, or a plain string."""
    if isinstance(item, str):
        return item
    if hasattr(item, "chunk"):
        return item.chunk.text
    if hasattr(item, "get_content"):
        return item.get_content()
    return item.text


def default_note(item: Any) -> str:
    """The annotation a relevant SessionSource carries into the prompt (counted, never cut); "" for others."""
    if getattr(item, "state", None) is AnnotationState.RELEVANT:
        return getattr(item, "annotation", "") or ""
    return ""


def default_score(item: Any) -> float:
    """`rel_score` when the item has one (Hit, SessionSource), else `score` (NodeWithScore); None counts as 0."""
    value = getattr(item, "rel_score", None)
    if value is None:
        value = getattr(item, "score", None)
    return float(value or 0.0)


def context_budget(context_window: int, max_tokens: int) -> int:
    """Prompt tokens left for sources: window minus reserved output minus framing."""
    return context_window - max_tokens - PROMPT_OVERHEAD_TOKENS


def chunk_cost(text: str, note: str = "") -> int:
    """Estimated prompt tokens for one source: ceil(chars / 3.5) + 40 header tokens,
    plus its annotation line when it has one (up to annotation.max_tokens)."""
    return estimate_tokens(text) + HEADER_TOKENS + (estimate_tokens(note) if note else 0)


def pack(
    items: Sequence[T],
    *,
    context_window: int,
    max_tokens: int,
    context_chunks: int,
    query: str | None = None,
    text: Callable[[T], str] = default_text,
    note: Callable[[T], str] = default_note,
    every_source: bool = False,
) -> list[tuple[T, Span | None]]:
    """What of `items` (already best first) goes into the prompt: (item, None) whole, (item, span) a window.

    Greedy in the given order, so a weaker short source never jumps
    ahead of a stronger long one. With a `query`, a source that does not fit
    whole is sent as its best window of at most WINDOW_CHARS (or the room left),
    and packing goes on; without one, or when even MIN_WINDOW_CHARS do not fit,
    packing stops there. At most `context_chunks` sources; [] when the budget is
    not positive.

    With `every_source` (llm.packing = "every-source"), a source goes in whole
    only if every source after it can still have a MIN_WINDOW_CHARS window (as
    many of them as the room holds at that size); from the first that cannot,
    the sources left share the room left evenly, each as its best window, so the
    lower-ranked ones reach the answer as their most relevant part instead of
    being left out.
    """
    budget = context_budget(context_window, max_tokens)
    kept: list[tuple[T, Span | None]] = []
    used = 0

    def smallest(item: T) -> int:
        return chunk_cost(text(item)[:MIN_WINDOW_CHARS], note(item))

    for at, item in enumerate(items):
        if len(kept) >= context_chunks:
            break
        body, extra = text(item), note(item)
        cost = chunk_cost(body, extra)
        later: list[T] = []
        reserve = 0
        if every_source and query is not None:        # the lower sources that still fit as the smallest windows
            room_left = budget - used - smallest(item)
            for other in items[at + 1:at + context_chunks - len(kept)]:
                if reserve + smallest(other) > room_left:
                    break
                later.append(other)
                reserve += smallest(other)
        if used + cost + reserve <= budget:
            kept.append((item, None))
            used += cost
            continue
        share = (budget - used) // (len(later) + 1) if later else budget - used
        room = min(WINDOW_CHARS, int((share - chunk_cost("", extra)) * CHARS_PER_TOKEN))
        if every_source and query is not None and used + smallest(item) + reserve <= budget:
            room = max(room, MIN_WINDOW_CHARS)     # the even share rounded below the smallest window it reserved
        if query is None or room < MIN_WINDOW_CHARS:
            break
        start, end = best_window(body, query, room)
        kept.append((item, (start, end)))
        used += chunk_cost(body[start:end], extra)
    return kept


def lost_in_the_middle(items: Sequence[T], score: Callable[[T], float] = default_score) -> list[T]:
    """Best first, second best last, the weakest in the middle (Liu et al., "Lost in the Middle:
    How Language Models Use Long Contexts", TACL 2024: models use the start and end of a long context best).

    Uses LlamaIndex's `LongContextReorder`, which alternates front/back from the
    weakest up and so puts the best *last* for an even count; the result is turned
    round in that case so the best source always opens the context. For scores
    .9 .8 .7 .6 .5 .4 the order is .9 .7 .5 .4 .6 .8.
    """
    if len(items) < 2:
        return list(items)
    from llama_index.core.postprocessor import LongContextReorder
    from llama_index.core.schema import NodeWithScore, TextNode

    wrapped = [NodeWithScore(node=TextNode(id_=str(i), text=""), score=score(item)) for i, item in enumerate(items)]
    ordered = LongContextReorder().postprocess_nodes(wrapped)
    if len(ordered) % 2 == 0:
        ordered.reverse()
    return [items[int(n.node.node_id)] for n in ordered]


CONVERSATION_SHARE = 3          # earlier turns may take at most 1/3 of the context budget
MESSAGE_TOKENS = 8              # a chat message's role and template markers


def fit_conversation(turns: Sequence[tuple[str, str]], budget: int) -> tuple[list[int], int]:
    """Which earlier (question, answer) pairs go into a follow-up's prompt, and the tokens they take.

    Whole pairs only, newest first, while they fit `budget` (never a message cut in
    the middle); an older pair that does not fit and everything before it are left
    out. Returns the kept indexes in conversation order and their token cost.
    """
    kept: list[int] = []
    used = 0
    for index in range(len(turns) - 1, -1, -1):
        question, answer = turns[index]
        cost = estimate_tokens(question) + estimate_tokens(answer) + 2 * MESSAGE_TOKENS
        if used + cost > budget:
            break
        kept.append(index)
        used += cost
    return sorted(kept), used
