"""A document as it is now, read the way the ingest reads it: its sha256 (of the file's bytes, or of an archive
member's extracted text, as `extraction` records it) and its text as `extract` extracts it. `ragtui verify
--against` compares a bundle's cited documents with it."""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ragtui.config import Settings
from ragtui.errors import RagtuiError
from ragtui.ingest.discover import NotRead, read_regular
from ragtui.ingest.extract import extract
from ragtui.ingest.extracted import Extracted
from ragtui.ingest.extraction import member_digest


class NotReadable(RagtuiError):
    """The document cannot be read or extracted now; the message says why."""


@dataclass(frozen=True)
class DocumentNow:
    sha256: str
    hashed: str         # "file": of its bytes; "text": of its extracted text (an archive's member)
    text: str


def document_now(file: Path, source: str, member: str, settings: Settings) -> DocumentNow:
    """The document `source` in `file`: the file itself, or when `member` is not empty, the archive member of
    that name (`source` then is the archive's name and `member` its member's, "a.zip" and "a.zip/m.txt")."""
    try:
        data = read_regular(file, settings.ingest.max_file_mb)
    except NotRead as exc:
        raise NotReadable(f"{file}: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="ragtui-verify-") as workdir:
        found = extract(source, data, settings.ingest, Path(workdir), None if member else file)
    wanted = member or source
    doc = next((d for d in found if isinstance(d, Extracted) and d.source == wanted), None)
    if doc is None:
        reasons = [d.reason for d in found if not isinstance(d, Extracted) and d.source in (wanted, source)]
        raise NotReadable(f"{file}: " + (reasons[0] if reasons else f"holds no document {wanted}"))
    if member:
        return DocumentNow(member_digest(doc.text), "text", doc.text)
    return DocumentNow(hashlib.sha256(data).hexdigest(), "file", doc.text)
