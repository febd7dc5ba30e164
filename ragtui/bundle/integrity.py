"""The integrity record of a bundle: hashes that show an edit, and the JSON path of each field they cover.

A bundle holds, beside its content, the sha256 of the content's canonical form and one sha256 per field (every
string, number, boolean and null of the content, except that the settings and each turn's prompt are hashed
whole), keyed by the field's JSON path (`$.content.turns[0].answer`). An edited field then fails by name. The
canonical form is Python's `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)`, UTF-8;
a text's own hash (a chunk's `text_sha256`) is the sha256 of its UTF-8 bytes.

Hashes show an edit, not a forger: whoever rewrites a field and its hashes makes a bundle that verifies. There is
no signature.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

WHOLE = ("settings", "prompt")      # objects and arrays hashed as one field
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def sha256_json(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


def sha256_text(text: str) -> str:
    """The sha256 of a text's UTF-8 bytes (a lone surrogate, which only an edited bundle holds, as CESU bytes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def key_path(parent: str, key: str | int) -> str:
    """`parent.key`, `parent['odd key']` or `parent[3]`: a JSON path (RFC 9535's normalized form for odd keys)."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if _NAME.fullmatch(key) else f"{parent}[{json.dumps(key)}]"


def fields(value: Any, path: str = "$.content") -> Iterator[tuple[str, Any]]:
    """(JSON path, value) of every field of the content that has a hash of its own."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from ((key_path(path, key), item),) if key in WHOLE else fields(item, key_path(path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from fields(item, key_path(path, i))
    else:
        yield path, value


def record(content: dict[str, Any]) -> dict[str, Any]:
    """The integrity record of `content`."""
    return {"algorithm": "sha256", "content_sha256": sha256_json(content),
            "fields": {path: sha256_json(value) for path, value in fields(content)}}


def edits(content: dict[str, Any], integrity: dict[str, Any]) -> list[tuple[str, str]]:
    """(JSON path, what is wrong) for each field whose hash is not the recorded one, added or removed; a recorded
    field hash that is itself edited (the content still matching its own hash) is named under `$.integrity`."""
    recorded: dict[str, str] = integrity["fields"]
    now = {path: sha256_json(value) for path, value in fields(content)}
    whole = sha256_json(content) == integrity["content_sha256"]
    found = []
    for path, digest in now.items():
        if path not in recorded:
            found.append((path, "added: the integrity record has no hash for it"))
        elif recorded[path] != digest:
            found.append((key_path("$.integrity.fields", path), "edited: the content still has its recorded hash")
                         if whole else (path, "edited: its sha256 is not the one recorded"))
    found += [(path, "removed: the integrity record has a hash for it") for path in recorded if path not in now]
    if not whole and not found:
        found.append(("$.integrity.content_sha256", "the content's sha256 is not the one recorded"))
    return found
