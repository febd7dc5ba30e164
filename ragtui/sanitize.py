"""Untrusted text made inert for a terminal: the one filter for what documents, file names and models say.

Documents, file names, server replies and model output can carry escape sequences
that clear the screen, set the window title or write the clipboard (OSC 52). What
the CLI prints from them goes through `clean` (running text: newlines and tabs
kept) or `one_line` (a name or a reason on one line: every control shown as an
escape such as \\x1b, so a file can still be told apart). Neither lets ESC, a C0
or C1 control, DEL or a bidirectional override through, so no sequence can form
even when a stream is cleaned piece by piece. Names that were not valid UTF-8
(surrogate escapes from os.fsdecode) are shown as \\xNN too, where printing them
raw would raise. Where text is shown by character offset (the source viewer selects a
chunk inside its document), `same_length` makes it inert without moving any offset.
"""

from __future__ import annotations

import re

# Whole sequences first (CSI, OSC/DCS/APC/PM/SOS strings up to their terminator, two-byte ESC x), then any
# single control left over. C1 controls U+0080-U+009F also start sequences on some terminals.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"                       # CSI ... final
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"   # OSC/DCS/SOS/PM/APC strings
    r"|\x1b[ -/]*[0-~]?"                                       # other ESC sequences (and a lone ESC)
)
_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")
_LINE_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")


def clean(text: str) -> str:
    """Running text with every escape sequence removed and controls dropped; \\n and \\t kept.

    \\r\\n becomes \\n; a lone \\r, \\f or \\v becomes a space (a lone \\r would let a line overwrite itself).
    """
    text = _SEQUENCE.sub("", text.replace("\r\n", "\n"))
    text = text.replace("\r", " ").replace("\f", " ").replace("\v", " ")
    return _CONTROL.sub("", text)


def one_line(text: str) -> str:
    """A name or reason for one line: every control, newline and tab shown as an escape (\\x1b, \\n, \\udcff)."""
    return _LINE_CONTROL.sub(_escape, text)


def same_length(text: str) -> str:
    """Running text made inert without moving any offset: every control but \n and \t becomes one visible
    stand-in (ESC is ␛, other C0 controls their Control Pictures, CR a space, the rest U+FFFD), so what
    follows an ESC stays as plain text and a viewer that selects by offset still selects the right span."""
    return _CONTROL.sub(_stand_in, text)


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0d:
        return " "
    if code < 0x20:
        return chr(0x2400 + code)
    return "␡" if code == 0x7f else "�"


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if "\ud800" <= char <= "\udfff":      # os.fsdecode's stand-in for an undecodable byte
        code = ord(char)
        return f"\\x{code - 0xdc00:02x}" if 0xdc80 <= code <= 0xdcff else f"\\u{code:04x}"
    return char.encode("unicode_escape").decode("ascii")
