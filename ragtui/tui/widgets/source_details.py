"""What the TUI says about one source beyond its row: how it was found (the engine's explanation, for its turn),
what it was annotated against, and the annotation as the model wrote it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragtui.model.conversation import SessionSource

if TYPE_CHECKING:
    from ragtui.tui.engine_door import ResearchSession


def asked(session: ResearchSession | None, source: SessionSource) -> str:
    """What `source` was annotated against (its turn's question in the conversation)."""
    if session is None:
        return ""
    try:
        return session.conversation.annotation_query(session.conversation.turn_of(source.number))
    except KeyError:
        return session.turn.query


def details(session: ResearchSession | None, source: SessionSource) -> list[str]:
    """The engine's explanation of how `source` was found, for its turn, and the annotation as written."""
    from ragtui.tui.engine_door import details as explained

    turn = None
    if session is not None:
        try:
            turn = session.turns[session.conversation.turn_of(source.number) - 1]
        except KeyError:
            turn = None
    lines = explained(None, [source]) if turn is None else \
        explained(turn.retrieval_meta, [source], rewrite=turn.rewrite, rewrite_meta=turn.rewrite_meta)
    return [*lines, *reply_lines(source)]


def reply_lines(source: SessionSource) -> list[str]:
    """The annotation as the model wrote it, line breaks, code and all, under a heading that says whether it
    quotes the source: what to read when the sources pane says "no quote"."""
    if not source.annotation:
        return []
    said = (" (it gives no quote that this source holds)" if source.quoteless
            else " (it quotes words this source does not hold)" if source.misquoted else "")
    return ["", f"Annotation by {source.annotated_by or 'the model'}, as written{said}:",
            *source.annotation.strip().splitlines()]
