"""Fit retrieved sources into the LLM's context, then order them against "lost in the middle".

Synthesis calls `pack` on the relevant sources (best first), numbers what it keeps,
then calls `lost_in_the_middle` to decide where each source sits in the prompt.
Both take any item type: pass `text=`/`score=` accessors, or rely on the defaults,
which understand `Hit`, `SessionSource` (anything with `.chunk`), `NodeWithScore` and `str`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ragtui.llm.tokens import PROMPT_OVERHEAD_TOKENS, estimate_tokens

T = TypeVar("T")

HEADER_TOKENS = 40              # "[N] SOURCE: collection/file [p.PAGE]" and annotation line


def default_text(item: Any) -> str:
    """The text of a Hit/SessionSource (via `.chunk.text`), a NodeWithScore or TextNode, or a plain string."""
    if isinstance(item, str):
        return item
    if hasattr(item, "chunk"):
        return item.chunk.text
    if hasattr(item, "get_content"):
        return item.get_content()
    return item.text


def default_score(item: Any) -> float:
    """`rel_score` when the item has one (Hit, SessionSource), else `score` (NodeWithScore); None counts as 0."""
    value = getattr(item, "rel_score", None)
    if value is None:
        value = getattr(item, "score", None)
    return float(value or 0.0)


def context_budget(context_window: int, max_tokens: int) -> int:
    """Prompt tokens left for sources: window minus reserved output minus framing (RAGWeed 3g)."""
    return context_window - max_tokens - PROMPT_OVERHEAD_TOKENS


def chunk_cost(text: str) -> int:
    """Estimated prompt tokens for one source: ceil(chars / 3.5) + 40 header tokens (RAGWeed 3g)."""
    return estimate_tokens(text) + HEADER_TOKENS


def pack(
    items: Sequence[T],
    *,
    context_window: int,
    max_tokens: int,
    context_chunks: int,
    text: Callable[[T], str] = default_text,
) -> list[T]:
    """The longest prefix of `items` (already best first) that fits the budget (RAGWeed 3g).

    Greedy in the given order: stops at the first source that would overflow the
    budget or at `context_chunks` sources, so a weaker short source never jumps
    ahead of a stronger long one. Returns [] when the budget is not positive.
    """
    budget = context_budget(context_window, max_tokens)
    kept: list[T] = []
    used = 0
    for item in items:
        if len(kept) >= context_chunks:
            break
        cost = chunk_cost(text(item))
        if used + cost > budget:
            break
        kept.append(item)
        used += cost
    return kept


def lost_in_the_middle(items: Sequence[T], score: Callable[[T], float] = default_score) -> list[T]:
    """Best first, second best last, the weakest in the middle (nadir; Liu et al. 2023).

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
