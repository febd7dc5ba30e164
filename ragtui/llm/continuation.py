"""Joining a continued answer to the part before it ("Continue" after an answer cut at max_tokens).

Asked to go on, models often restart a little earlier: they repeat the last words,
the last sentence, or (weak models) the whole answer. They also drop or double the
space at the seam. `seam` says what to append so the two parts read as one text,
and `SeamBuffer` does the same while tokens stream, holding text back only while it
could still be a repeat.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_NO_SPACE_BEFORE = ".,;:!?)]}%"
_NO_SPACE_AFTER = "([{/-\"'“‘"


def _prefix_function(text: str) -> list[int]:
    pi = [0] * len(text)
    for i in range(1, len(text)):
        k = pi[i - 1]
        while k and text[i] != text[k]:
            k = pi[k - 1]
        if text[i] == text[k]:
            k += 1
        pi[i] = k
    return pi


def overlap(head: str, body: str) -> int:
    """Length of the longest repeat: a suffix of `head` that `body` starts with.

    Only whole words count (word boundaries on both ends, at least one letter or
    digit), so "in the" + "theory" is not taken for a repeat of "the". Linear time
    (KMP prefix function over body + NUL + head).
    """
    if not head or not body:
        return 0
    pi = _prefix_function(body + "\0" + head)
    k = pi[-1]
    while k:
        start = len(head) - k
        word_start = start == 0 or not (head[start - 1].isalnum() and head[start].isalnum())
        word_end = k == len(body) or not (body[k - 1].isalnum() and body[k].isalnum())
        if word_start and word_end and any(c.isalnum() for c in body[:k]):
            return k
        k = pi[k - 1]
    return 0


def seam(prev: str, add: str) -> str:
    """The text to append to `prev` so that prev + result joins `add` without repeats or lost text."""
    head, body = prev.rstrip(), add.lstrip()
    if not body:
        return ""
    prev_ws = prev[len(head):]
    k = overlap(head, body)
    if k:
        rest = body[k:]
        lead = rest[: len(rest) - len(rest.lstrip())]
        return rest.lstrip() if prev_ws and lead else rest
    lead = add[: len(add) - len(body)]
    if prev_ws:
        extra = lead.count("\n") - prev_ws.count("\n")
        return "\n" * max(extra, 0) + body
    if lead or not head:
        return add
    if body[0] in _NO_SPACE_BEFORE or head[-1] in _NO_SPACE_AFTER:
        return body
    return " " + body


@dataclass
class SeamBuffer:
    """Streams a continuation of `prev`, holding back text while it could still be a repeat.

    `feed` returns the text that is safe to show now; `finish` returns what is left.
    Everything returned, concatenated, equals `seam(prev, whole continuation)`.
    """

    prev: str
    _pending: str = ""
    _resolved: bool = field(default=False)

    def feed(self, piece: str) -> str:
        if self._resolved:
            return piece
        self._pending += piece
        body = self._pending.lstrip()
        if not body:
            return ""
        if body in self.prev.rstrip():
            return ""
        return self._resolve()

    def finish(self) -> str:
        return "" if self._resolved else self._resolve()

    def _resolve(self) -> str:
        self._resolved = True
        out, self._pending = seam(self.prev, self._pending), ""
        return out
