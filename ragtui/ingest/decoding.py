"""Bytes to text: UTF-8 (BOM allowed), else cp1252/Latin-1, binary content refused, folded and with \\n line ends."""

from __future__ import annotations

import re

from ragtui.ingest.extracted import ExtractError
from ragtui.text import normalize

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\x7f]")


def decode(data: bytes) -> tuple[str, str]:
    """(text, encoding): UTF-8 (BOM allowed), else cp1252/Latin-1; binary content (NULs, control chars)
    is refused. The text is folded (`normalize`) and has \\n line ends."""
    head = data[:65536]
    if b"\x00" in head:
        raise ExtractError("binary content (NUL bytes) in a text file")
    encoding = "utf-8"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            text, encoding = data.decode("cp1252"), "cp1252"
        except UnicodeDecodeError:
            text, encoding = data.decode("latin-1"), "latin-1"
        if sum(0x80 <= ord(c) <= 0x9f for c in text[:65536]) > len(text[:65536]) * 0.01:
            raise ExtractError("binary content (not decodable as text)") from None
    sample = text[:65536]
    if len(_CONTROL.findall(sample)) > max(2, len(sample) // 100):
        raise ExtractError("binary content (control characters) in a text file")
    return normalize(text.replace("\r\n", "\n").replace("\r", "\n")), encoding


def decode_text(data: bytes) -> str:
    """The text of `decode`, without its encoding."""
    return decode(data)[0]
