"""Joining a continued answer to the part before it ("Continue" after an answer cut at max_tokens).

Asked to go on, models often restart a little earlier: they repeat the last words,
the last sentence, or (weak models) the whole answer, near-verbatim, a word changed
here and there, before going on with new text. They also drop or double the space
at the seam. `seam` says what to append so the two parts read as one text, and
`SeamBuffer` does the same while tokens stream, holding text back only while it
could still be a repeat.

A restart of the whole answer is found on word shingles (runs of `SHINGLE` words,
case-folded), the measure of near-duplicate text of Broder, "On the resemblance and
containment of documents" (1997): the continuation's shingles are looked up, in
order, in the answer's. One changed word costs at most `SHINGLE` shingles, so a copy
with a changed word in every eight keeps over half of them (`SHARE`), while new text
shares a three-word run with the answer only now and then, never half its runs. The
copy must start at the answer's opening and share at least `MIN_SHARED` shingles
(ten words in a row: a new sentence that opens like the answer, or a stock phrase
such as "according to the sources", is not a restart), and it ends where `GAP`
words pass without a shared shingle; what follows is the new text.

A model in a loop, asked to go on, writes the answer's last paragraph again
(`repeat_end`): a continuation whose words open with every word of that paragraph
(at least `MIN_SHARED`; case, spacing and punctuation aside) starts with a copy of
it, which is dropped; `SeamBuffer.repeated` says so when the copied paragraph was
whole, so the reader can be told.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

SHINGLE = 3
MIN_SHARED = 8
SHARE = 0.5
GAP = 6
_WORD = re.compile(r"\w+")

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


class _Restart:
    """Follows a continuation's words, one at a time, against the answer it continues: whether it restarts
    the answer, and where its copy of it ends. Constant work per word (a dictionary look-up and a bisect)."""

    def __init__(self, prev: str) -> None:
        self.prev = prev
        self.spans = [(m.start(), m.end()) for m in _WORD.finditer(prev)]
        words = [prev[a:b].casefold() for a, b in self.spans]
        self.index: dict[tuple[str, ...], list[int]] = {}
        for i in range(len(words) - SHINGLE + 1):
            self.index.setdefault(tuple(words[i:i + SHINGLE]), []).append(i)
        self.recent: list[str] = []
        self.count = 0              # words seen
        self.matched = 0            # shingles found in the answer, in order
        self.at_prev = -1           # where in the answer the last one was found
        self.last = -1              # the continuation's word that ended it
        self.end = 0                # and where that word ends in the continuation
        self.done = False

    def word(self, text: str, start: int, end: int) -> None:
        """Take the continuation's next word, text[start:end]."""
        self.count += 1
        self.recent = [*self.recent[-(SHINGLE - 1):], text[start:end].casefold()]
        positions = self.index.get(tuple(self.recent), []) if len(self.recent) == SHINGLE else []
        found = bisect_right(positions, self.at_prev)
        if found < len(positions) and (self.matched or positions[found] <= GAP):
            self.matched, self.at_prev, self.last, self.end = self.matched + 1, positions[found], self.count - 1, end
        if self.matched == 0:
            self.done = self.count >= SHINGLE - 1 + GAP      # a copy shares a shingle within its first GAP words
        else:
            self.done = self.count - 1 - self.last > GAP

    @property
    def restarts(self) -> bool:
        return self.matched >= MIN_SHARED and self.matched >= SHARE * (self.last + 1 - (SHINGLE - 1))

    def cut(self, text: str) -> int:
        """Where the copy ends in `text` (the continuation): after its last shared word, and after the
        punctuation that follows it when the answer has the same there; 0 when it is no restart."""
        if not self.restarts:
            return 0
        word_end = self.spans[self.at_prev + SHINGLE - 1][1]
        following = self.spans[self.at_prev + SHINGLE][0] if self.at_prev + SHINGLE < len(self.spans) else None
        theirs = self.prev[word_end:following].strip()
        gap = re.match(r"\W*", text[self.end:])
        ours = gap.group() if gap else ""
        return self.end + len(ours.rstrip()) if theirs and ours.strip() == theirs else self.end


def restart_end(prev: str, add: str) -> int:
    """How much of `add` restarts `prev` near-verbatim from its opening (0 when it does not): the part a
    continuation repeats before its new text."""
    restart = _Restart(prev)
    for match in _WORD.finditer(add):
        restart.word(add, match.start(), match.end())
        if restart.done:
            break
    return restart.cut(add)


_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_CLOSING = ".,;:!?)]}\"'”’»*_"


def _last_paragraph(prev: str) -> str:
    return _PARAGRAPH_BREAK.split(prev.rstrip())[-1]


def repeat_end(prev: str, add: str) -> int:
    """How much of `add` is a copy of the last paragraph of `prev` it opens with (0 when it does not): its words,
    case-folded, are the paragraph's words, at least MIN_SHARED of them; the copy ends after its last word and
    the punctuation closing it."""
    wanted = [w.casefold() for w in _WORD.findall(_last_paragraph(prev))]
    if len(wanted) < MIN_SHARED:
        return 0
    words = _WORD.finditer(add)
    end = 0
    for want in wanted:
        word = next(words, None)
        if word is None or word.group().casefold() != want:
            return 0
        end = word.end()
    return end + len(add[end:]) - len(add[end:].lstrip(_CLOSING))


def _may_repeat(prev: str, pending: str) -> bool:
    """Whether the words of `pending` so far (the last one perhaps unfinished) open the last paragraph of `prev`."""
    wanted = [w.casefold() for w in _WORD.findall(_last_paragraph(prev))]
    have = [w.casefold() for w in _WORD.findall(pending)]
    if len(wanted) < MIN_SHARED or len(have) > len(wanted):
        return False
    return not have or (have[:-1] == wanted[:len(have) - 1] and wanted[len(have) - 1].startswith(have[-1]))


def seam(prev: str, add: str) -> str:
    """The text to append to `prev` so that prev + result joins `add` without repeats or lost text."""
    add = add[restart_end(prev, add):]
    add = add[repeat_end(prev, add):]
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
    repeated: bool = False          # the continuation opened with a copy of the answer's whole last paragraph
    _pending: str = ""
    _resolved: bool = field(default=False)
    _restart: _Restart | None = None
    _scanned: int = 0

    def feed(self, piece: str) -> str:
        if self._resolved:
            return piece
        self._pending += piece
        body = self._pending.lstrip()
        if not body:
            return ""
        if body in self.prev.rstrip() or self._may_restart() or _may_repeat(self.prev, self._pending):
            return ""
        return self._resolve()

    def _may_restart(self) -> bool:
        """Whether the pending text may still be a restart of the whole answer, or is one whose copy goes on.
        Each word is looked at once, when the character after it has arrived."""
        restart = self._restart = self._restart or _Restart(self.prev)
        for match in _WORD.finditer(self._pending, self._scanned):
            if match.end() == len(self._pending) or restart.done:
                break
            restart.word(self._pending, match.start(), match.end())
            self._scanned = match.end()
        return not restart.done

    def finish(self) -> str:
        return "" if self._resolved else self._resolve()

    def _resolve(self) -> str:
        self._resolved = True
        ends_a_sentence = self.prev.rstrip().endswith((".", "!", "?", "]", ".)", '."', ".”"))
        self.repeated = ends_a_sentence and repeat_end(self.prev, self._pending[restart_end(self.prev,
                                                                                            self._pending):]) > 0
        out, self._pending = seam(self.prev, self._pending), ""
        return out
