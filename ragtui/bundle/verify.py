"""A bundle verified from what it holds alone: its hashes, and every check recomputed from its stored texts
and compared with what it claims, each failure named by the JSON path of the field that fails."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragtui.bundle.checks import source_checks, turn_checks
from ragtui.bundle.integrity import edits, key_path, sha256_text
from ragtui.bundle.read import conversation_of


@dataclass(frozen=True)
class Failure:
    """A field of the bundle that does not hold: its JSON path and why."""

    path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


def verify(data: dict[str, Any]) -> list[Failure]:
    """Every failure of a bundle that its schema accepted (`read.load`), one per field, in the bundle's order."""
    content = data["content"]
    found: dict[str, list[str]] = {}
    for path, reason in _texts(content) + edits(content, data["integrity"]) + _recomputed(content):
        found.setdefault(path, []).append(reason)
    return [Failure(path, "; ".join(dict.fromkeys(reasons))) for path, reasons in found.items()]


def _texts(content: dict[str, Any]) -> list[tuple[str, str]]:
    """Each chunk text that is not the text its own hash was taken of."""
    return [(f"$.content.turns[{t}].sources[{i}].text", "does not match its text_sha256: edited")
            for t, turn in enumerate(content["turns"]) for i, source in enumerate(turn["sources"])
            if sha256_text(source["text"]) != source["text_sha256"]]


def _recomputed(content: dict[str, Any]) -> list[tuple[str, str]]:
    """Each check the bundle records that, recomputed from its texts, comes out otherwise."""
    conversation = conversation_of(content)
    found = []
    for t, (data, turn) in enumerate(zip(content["turns"], conversation.turns, strict=True)):
        at = f"$.content.turns[{t}]"
        found += _differences(f"{at}.checks", data["checks"], turn_checks(conversation, turn))
        for i, (source_data, source) in enumerate(zip(data["sources"], turn.sources, strict=True)):
            claimed = {key: source_data[key] for key in ("used", "misquoted")}
            for path, reason in _differences(f"{at}.sources[{i}]", claimed, source_checks(source)):
                if path.endswith(".used"):
                    reason += (f" (its verdict is {source.state.value or 'none'}, with "
                               f"{'the override ' + source.override.value if source.override.value else 'no override'}"
                               "): a verdict or its use changed without an override record")
                found.append((path, reason))
    return found


def _differences(path: str, claimed: Any, computed: Any) -> list[tuple[str, str]]:
    """(path, reason) for each place where what the bundle claims is not what was recomputed."""
    if isinstance(claimed, dict) and isinstance(computed, dict):
        return [d for key in computed for d in _differences(key_path(path, key), claimed.get(key), computed[key])]
    if isinstance(claimed, list) and isinstance(computed, list) and len(claimed) == len(computed) \
            and all(isinstance(c, dict) for c in claimed):
        return [d for i, (a, b) in enumerate(zip(claimed, computed, strict=True))
                for d in _differences(key_path(path, i), a, b)]
    if claimed == computed:
        return []
    return [(path, f"the bundle says {_shown(claimed)}, recomputed from the bundle: {_shown(computed)}")]


def _shown(value: Any) -> str:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return f"{len(value)} item{'s' if len(value) != 1 else ''}" if value and isinstance(value[0], dict) \
            else str(list(value))
    text = repr(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    return text if len(text) <= 120 else text[:119] + "…"
