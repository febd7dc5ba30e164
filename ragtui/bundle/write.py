"""A saved session written as a bundle: its questions, answers, cited texts with their documents' hashes, verdicts
and overrides, models and settings, every check as computed, and the integrity record (`integrity`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragtui import __version__
from ragtui.bundle.checks import source_checks, turn_checks
from ragtui.bundle.integrity import record, sha256_text
from ragtui.bundle.read import FORMAT, VERSION, conversation_of
from ragtui.model.chunks import Chunk
from ragtui.model.conversation import Conversation, SessionSource, Turn
from ragtui.timestamps import now

SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class DocumentHash:
    """The sha256 of a cited document when its chunk was ingested: of the file's bytes ("file"), or of its
    extracted text ("text": an archive's member, which the ingest hashes so); "" for both when unknown."""

    sha256: str = ""
    of: str = ""


def bundle(conversation: Conversation, document_hash: Callable[[Chunk], DocumentHash]) -> dict[str, Any]:
    """The bundle of a stored conversation; `document_hash` gives each cited chunk's document hash."""
    content: dict[str, Any] = {
        "session": {"id": conversation.id, "created_at": conversation.created_at,
                    "updated_at": conversation.updated_at, "collections": list(conversation.collections)},
        "models": {"synthesis": conversation.synthesis_model, "annotation": conversation.annotation_model,
                   "annotation_on": conversation.annotation_on},
        "settings": json.loads(json.dumps(dict(conversation.config), default=str)),
        "research": conversation.research.to_json() if conversation.research is not None else None,
        "turns": [_turn(turn, document_hash) for turn in conversation.turns],
    }
    # The checks are computed from the conversation as the bundle holds it, as `ragtui verify` recomputes them.
    held = conversation_of(content)
    for turn_json, turn in zip(content["turns"], held.turns, strict=True):
        turn_json["checks"] = turn_checks(held, turn)
        for source_json, source in zip(turn_json["sources"], turn.sources, strict=True):
            source_json.update(source_checks(source))
    return {"format": FORMAT, "version": VERSION, "written_by": f"ragtui {__version__}", "written_at": now(),
            "content": content, "integrity": record(content)}


def _turn(turn: Turn, document_hash: Callable[[Chunk], DocumentHash]) -> dict[str, Any]:
    return {"question": turn.query, "rewrite": turn.rewrite, "rewrite_by": turn.rewrite_by, "answer": turn.answer,
            "stop_reason": turn.stop_reason.value, "continuations": turn.continuations,
            "prompt": [[role, text] for role, text in turn.prompt], "prompt_sources": list(turn.prompt_numbers),
            "citations": list(turn.citations), "unknown_citations": list(turn.unknown_citations),
            "sources": [_source(s, document_hash(s.chunk)) for s in turn.sources]}


def _source(source: SessionSource, hashed: DocumentHash) -> dict[str, Any]:
    meta = source.chunk.meta
    if not SHA256.fullmatch(hashed.sha256):     # a record that holds no sha256 (damaged, or never written)
        hashed = DocumentHash()
    return {"number": source.number, "collection": meta.collection, "document": meta.source,
            "document_sha256": hashed.sha256 or None, "document_hashed": hashed.of or "unknown",
            "format": meta.format, "page": meta.page, "pages": meta.pages,
            "page_breaks": meta.page_breaks, "heading": meta.heading,
            "chunk_id": source.chunk.id, "chunk_index": meta.chunk_index, "char_start": meta.char_start,
            "char_end": meta.char_end, "lead": meta.lead, "text": source.chunk.text,
            "text_sha256": sha256_text(source.chunk.text), "verdict": source.state.value,
            "override": source.override.value, "annotation": source.annotation,
            "annotated_by": source.annotated_by, "annotation_prompt": source.annotation_prompt}


def dumps(data: dict[str, Any]) -> str:
    """The bundle as the file holds it: indented, every character outside ASCII as an escape, so that no
    control sequence a document or a model wrote reaches a terminal that shows the file."""
    return json.dumps(data, indent=1, ensure_ascii=True) + "\n"
