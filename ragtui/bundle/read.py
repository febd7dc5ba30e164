"""A bundle read as the untrusted file it is: bounded in size and depth, valid under its JSON Schema
(`schema.json`), of a format version this ragtui reads; and its content read back as a `Conversation`."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ragtui.errors import RagtuiError
from ragtui.model.chunks import Chunk, ChunkMeta
from ragtui.model.conversation import AnnotationState, Conversation, Override, SessionSource, StopReason, Turn
from ragtui.model.research_run import ResearchRun
from ragtui.paths import UnreadableFile, read_small_text
from ragtui.server_limits import ReplyTooDeep, loads

FORMAT = "ragtui-session-bundle"
VERSION = 1
MAX_BYTES = 32 * 2**20          # a session of many turns with long chunks is a few MiB
MAX_DEPTH = 24                  # the format nests 8 deep; the settings are flat


class BundleInvalid(RagtuiError):
    """A file that is not a bundle this ragtui can verify: unreadable, too large, not JSON, or not valid under
    the schema (the message names the JSON path)."""

    exit_code = 2


@cache
def schema() -> dict[str, Any]:
    """The bundle's JSON Schema, shipped in the package."""
    loaded: dict[str, Any] = json.loads(resources.files("ragtui.bundle").joinpath("schema.json").read_text("utf-8"))
    return loaded


def load(path: Path) -> dict[str, Any]:
    """The bundle at `path`, checked; BundleInvalid saying why not."""
    try:
        text = read_small_text(path, MAX_BYTES, what="a bundle")
        data = loads(text, str(path))
    except UnreadableFile as exc:
        raise BundleInvalid(str(exc)) from None
    except (ValueError, ReplyTooDeep) as exc:
        raise BundleInvalid(f"{path} is not JSON: {exc}") from None
    if _depth(data) > MAX_DEPTH:
        raise BundleInvalid(f"{path} is nested deeper than a bundle ({MAX_DEPTH} levels)")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BundleInvalid(f"{path} is not a ragtui session bundle: its $.format is not {FORMAT!r}")
    if isinstance(data.get("version"), int) and data["version"] > VERSION:
        raise BundleInvalid(f"{path} is a bundle of format version {data['version']}; this ragtui reads version "
                            f"{VERSION}", hint="upgrade ragtui")
    _validate(path, data)
    _bounded(path, data["content"])
    return data


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in `value`, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def _validate(path: Path, data: Any) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(schema()).iter_errors(data))
    if error is not None:
        raise BundleInvalid(f"{path} is not a valid bundle: {error.json_path}: {_clipped(error.message)}")


def _bounded(path: Path, content: dict[str, Any]) -> None:
    """BundleInvalid for a bundle whose checks would look through more text than `checks.MAX_WORK`."""
    from ragtui.bundle.checks import MAX_WORK, work

    needed = work(conversation_of(content))
    if needed > MAX_WORK:
        raise BundleInvalid(f"{path} asks for more checking than verify does: its quotes and citations would be "
                            f"looked up through {needed:,} characters of source text (at most {MAX_WORK:,})")


def _clipped(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def conversation_of(content: dict[str, Any]) -> Conversation:
    """The conversation a bundle's content holds, with what every check reads: answers, prompts, citations,
    and each source's text, verdict, override and annotation (scores and retrieval details are not kept)."""
    session, models = content["session"], content["models"]
    return Conversation(
        collections=tuple(session["collections"]), config=content["settings"], id=session["id"],
        created_at=session["created_at"], updated_at=session["updated_at"],
        synthesis_model=models["synthesis"], annotation_model=models["annotation"],
        annotation_on=models["annotation_on"], turns=tuple(_turn(t) for t in content["turns"]),
        research=None if content["research"] is None else ResearchRun.from_json(content["research"]))


def _turn(data: dict[str, Any]) -> Turn:
    return Turn(query=data["question"], rewrite=data["rewrite"], rewrite_by=data["rewrite_by"],
                answer=data["answer"], stop_reason=StopReason.parse(data["stop_reason"]),
                continuations=data["continuations"], prompt=tuple((role, text) for role, text in data["prompt"]),
                prompt_numbers=tuple(data["prompt_sources"]), citations=tuple(data["citations"]),
                unknown_citations=tuple(data["unknown_citations"]),
                sources=tuple(_source(s) for s in data["sources"]))


def _source(data: dict[str, Any]) -> SessionSource:
    meta = ChunkMeta(collection=data["collection"], source=data["document"], file_hash=data["document_sha256"] or "",
                     format=data["format"], chunk_index=data["chunk_index"], char_start=data["char_start"],
                     char_end=data["char_end"], page=data["page"], page_breaks=data["page_breaks"],
                     heading=data["heading"], lead=data["lead"])
    return SessionSource(number=data["number"], chunk=Chunk(data["chunk_id"], data["text"], meta), score=0.0,
                         rel_score=0.0, legs=(), state=AnnotationState(data["verdict"]),
                         override=Override(data["override"]), annotation=data["annotation"],
                         annotated_by=data["annotated_by"], annotation_prompt=data["annotation_prompt"])
