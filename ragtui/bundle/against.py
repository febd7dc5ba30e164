"""A bundle's cited documents compared with the documents as they are now (`ragtui verify --against PATH`):
each document's sha256 then and now, and whether each cited passage is still in its text.

PATH is a folder holding the documents as they were ingested (each found at its path in the bundle, else by its
file name at the folder's top) or one file, which stands for the cited documents of its name. A cited passage is
each chunk's text, each quote of an answer found in it and its annotation's quote, looked up with the one quote
matcher (`quotes.occurs`) in the text the ingest's own extraction reads from the file now. A document changed
since the session still holds when every passage cited from it is still in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtui.bundle.checks import turn_checks
from ragtui.bundle.read import conversation_of
from ragtui.bundle.verify import Failure
from ragtui.config import Settings
from ragtui.ingest.current import NotReadable, document_now
from ragtui.ingest.extract import archive_of
from ragtui.quotes import occurs


@dataclass
class DocumentCheck:
    """One cited document compared with its file now."""

    collection: str
    document: str
    sha256_then: str            # "" when the bundle does not know it
    file: str = ""              # where it was found; "" when not given or not found
    sha256_now: str = ""
    state: str = "not given"    # "unchanged", "changed", "unknown" (no hash then), "gone", "unreadable", "not given"
    passages: int = 0           # cited passages looked up
    missing: list[str] = field(default_factory=list)     # the JSON paths of those no longer in it

    def to_json(self) -> dict[str, Any]:
        return {"collection": self.collection, "document": self.document, "file": self.file,
                "sha256_then": self.sha256_then or None, "sha256_now": self.sha256_now or None,
                "state": self.state, "passages": self.passages, "missing": self.missing}


def against(data: dict[str, Any], path: Path, settings: Settings) -> tuple[list[DocumentCheck], list[Failure]]:
    """Each cited document compared with its file under `path`, and a failure for each that does not hold."""
    passages = _passages(data["content"])
    checks: list[DocumentCheck] = []
    failures: list[Failure] = []
    for (collection, document), (sha256, first, cited) in passages.items():
        check = DocumentCheck(collection, document, sha256)
        checks.append(check)
        if not _safe(document):
            check.state = "unreadable"
            failures.append(Failure(first, f"{collection}/{document} is not a name a document can have under "
                                           f"{path} (an absolute path, or one with . or .. parts)"))
            continue
        try:
            found = _locate(path, document)
        except OSError as exc:      # a name too long for the file system, or a folder that cannot be listed
            check.state = "unreadable"
            failures.append(Failure(first, f"{collection}/{document} cannot be looked up under {path}: "
                                           f"{exc.strerror or exc}"))
            continue
        if found is None:
            if path.is_dir():
                check.state = "gone"
                failures.append(Failure(first, f"{collection}/{document} is not in {path}"))
            continue
        file, source, member = found
        check.file = str(file)
        try:
            now = document_now(file, source, member, settings)
        except NotReadable as exc:
            check.state = "unreadable"
            failures.append(Failure(first, f"{collection}/{document} cannot be read now: {exc}"))
            continue
        check.sha256_now = now.sha256
        check.state = "unchanged" if now.sha256 == sha256 else "changed" if sha256 else "unknown"
        check.passages = len(cited)
        for where, passage in cited:
            if not occurs(passage, now.text):
                check.missing.append(where)
                failures.append(Failure(where, f"not in {collection}/{document} as it is now"))
    if path.is_file() and not any(c.file for c in checks):
        failures.append(Failure("$.content", f"no cited document is named {path.name}"))
    return checks, failures


Passages = dict[tuple[str, str], tuple[str, str, list[tuple[str, str]]]]


def _passages(content: dict[str, Any]) -> Passages:
    """(collection, document) -> (its sha256 then, the JSON path of its first source, [(JSON path, passage)]) for
    every document the bundle cites: each chunk's text (the span of the document it holds), each answer's
    quote found in it, its annotation's quote."""
    conversation = conversation_of(content)
    found: Passages = {}
    sources = {}
    for t, turn in enumerate(conversation.turns):
        for i, source in enumerate(turn.sources):
            at = f"$.content.turns[{t}].sources[{i}]"
            meta = source.chunk.meta
            entry = found.setdefault((meta.collection, meta.source), (meta.file_hash, f"{at}.document", []))
            entry[2].append((f"{at}.text", source.chunk.span_text))
            if source.quote:
                entry[2].append((f"{at}.annotation", source.quote))
            sources[source.number] = (meta.collection, meta.source)
    for t, turn in enumerate(conversation.turns):
        for q, check in enumerate(turn_checks(conversation, turn)["quotes"]):
            for document in dict.fromkeys(sources[n] for n in check["found_in"] if n in sources):
                found[document][2].append((f"$.content.turns[{t}].checks.quotes[{q}].quote", check["quote"]))
    return found


def _safe(document: str) -> bool:
    """Whether a document's name stays inside the folder it is looked up in: a bundle is untrusted."""
    return not document.startswith("/") and all(part not in ("", ".", "..") for part in document.split("/"))


def _locate(path: Path, document: str) -> tuple[Path, str, str] | None:
    """(the file, its name as the ingest named it, the member's name or "") of `document` under `path`."""
    parts = document.split("/")
    if path.is_file():
        archive = archive_of(document)
        if path.name == parts[-1] and not archive:
            return path, path.name, ""
        return (path, path.name, path.name + document[len(archive):]) if archive.split("/")[-1] == path.name \
            else None
    for k in range(1, len(parts) + 1):
        candidate = path.joinpath(*parts[:k])
        if candidate.is_file():
            return candidate, "/".join(parts[:k]), document if k < len(parts) else ""
        if not candidate.is_dir():
            break
    flat = path / parts[-1]
    return (flat, parts[-1], "") if len(parts) > 1 and flat.is_file() else None

