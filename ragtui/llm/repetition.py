"""Degenerate repetition in a streamed answer: the tail that repeats itself until max_tokens.

A small model can fall into a loop, writing one paragraph ten times or the same few
words over and over until `llm.max_tokens`, which at a few tokens a second is
minutes of the user's time. `RepetitionWatch` is fed the answer as it streams and
says when its tail repeats, with how much of the text to keep: what came before the
repetition and one copy of it.

Two loops are watched, each on exact repeats of case-folded words:

- a block of whole sentences or paragraphs (1 to `MAX_BLOCK_UNITS` of them, at least
  `MIN_BLOCK_WORDS` words) written `BLOCK_COPIES` times in a row: a sentence that long
  said three times running is not emphasis;
- a run of 1 to `MAX_LOOP_WORDS` words written at least `MIN_LOOP_COPIES` times in a
  row and `MIN_LOOP_SPAN` words in all ("the the the ...", "and then and then ..."),
  a loop with no full stop to end a sentence.

Each word and each sentence is looked at once, when it is complete, against a bounded
window of the ones before it: the work per token does not grow with the answer.

A loop of a long passage may reach `llm.max_tokens` before its third copy: a 40-word
passage written two and a half times fills a small budget. So an answer cut at the
token limit is checked once more, at the cut (`repeat_at_cut`): two copies in a row of
a passage of `CUT_MIN_WORDS` words or more, the last one perhaps cut short, are a loop
too. Two copies of a long passage are not emphasis either, and continuing such an
answer only writes more copies.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

BLOCK_COPIES = 3
MIN_BLOCK_WORDS = 8
MAX_BLOCK_UNITS = 16
MAX_LOOP_WORDS = 12
MIN_LOOP_COPIES = 4
MIN_LOOP_SPAN = 32

CUT_MIN_WORDS = 20          # a passage this long, written twice in a row up to the token limit, is a loop
CUT_WINDOW_WORDS = 1200     # the words before the cut looked at (two copies of a passage of up to 600 words)

_CLOSING = ".,;:!?)]}\"'”’»*_"     # what may close a copy's last word ("[2].")
_KEEP_AT_LEAST = 4096       # characters of text no comparison needs, dropped in one go
_WORD = re.compile(r"\w+")
_UNIT_END = re.compile(r"[.!?]+[\"'”’»)\]]*(?=\s)|\n")


@dataclass(frozen=True)
class Repetition:
    """The answer's tail repeats: keep text[:keep], which ends with one copy of `block`."""

    keep: int
    block: str
    copies: int


class _Tail:
    """Runs of repeats at each period (1..max_period) over a stream of keys, with the spans of the last ones."""

    def __init__(self, max_period: int, history: int) -> None:
        self.max_period = max_period
        self.keys: deque[str] = deque(maxlen=history)
        self.spans: deque[tuple[int, int]] = deque(maxlen=history)
        self.runs = [0] * (max_period + 1)     # runs[p]: how many latest keys equal the key p before them

    def push(self, key: str, start: int, end: int) -> None:
        for p in range(1, self.max_period + 1):
            self.runs[p] = self.runs[p] + 1 if len(self.keys) >= p and self.keys[-p] == key else 0
        self.keys.append(key)
        self.spans.append((start, end))

    def first_copy(self, period: int) -> tuple[int, int]:
        """(start, end) in the text of the first copy of the block the latest keys repeat at `period`."""
        back = min(self.runs[period] + period, len(self.keys))   # the copies, all of them: the last `back` keys
        return self.spans[-back][0], self.spans[-back + period - 1][1]


class RepetitionWatch:
    """Fed an answer piece by piece; `feed` returns a `Repetition` once its tail loops, None until then.

    Offsets are into the whole text fed so far; the watch itself keeps only the stretch it may still
    compare (the last sentences and words), so neither its memory nor its work grows with the answer.
    """

    def __init__(self) -> None:
        self.found: Repetition | None = None
        self._words = _Tail(MAX_LOOP_WORDS, MAX_LOOP_WORDS * MIN_LOOP_COPIES + MIN_LOOP_SPAN)
        self._units = _Tail(MAX_BLOCK_UNITS, MAX_BLOCK_UNITS * BLOCK_COPIES + 1)
        self._unit_words: deque[int] = deque(maxlen=MAX_BLOCK_UNITS * BLOCK_COPIES + 1)
        self._text = ""             # the text from offset `_base` on
        self._base = 0
        self._word_at = 0           # where the next word may start
        self._unit_at = 0           # where the current sentence starts
        self._scan_at = 0           # where the search for its end goes on

    def feed(self, piece: str) -> Repetition | None:
        if self.found:
            return self.found
        self._text += piece
        self.found = self._units_done() or self._words_done()
        self._forget()
        return self.found

    def _forget(self) -> None:
        """Drop the text no comparison can reach any more, once there is a good stretch of it."""
        needed = min(self._word_at, self._unit_at, *(tail.spans[0][0] for tail in (self._words, self._units)
                                                      if tail.spans))
        if needed - self._base > _KEEP_AT_LEAST:
            self._text, self._base = self._text[needed - self._base:], needed

    def _words_done(self) -> Repetition | None:
        base, text = self._base, self._text
        for match in _WORD.finditer(text, self._word_at - base):
            if match.end() == len(text):                    # the word may go on in the next piece
                break
            self._word_at = base + match.end()
            self._words.push(match.group().casefold(), base + match.start(), base + match.end())
            for period in range(1, MAX_LOOP_WORDS + 1):
                copies = self._words.runs[period] // period + 1
                if copies >= MIN_LOOP_COPIES and copies * period >= MIN_LOOP_SPAN:
                    return self._repetition(self._words, period, copies)
        return None

    def _units_done(self) -> Repetition | None:
        base, text = self._base, self._text
        while end := _UNIT_END.search(text, max(self._scan_at, self._unit_at) - base):
            if end.end() == len(text) and end.group() != "\n":
                break                                       # "3." may be "3.5"; wait for what follows
            start, self._unit_at = self._unit_at, base + end.end()
            self._scan_at = self._unit_at
            words = [w.casefold() for w in _WORD.findall(text, start - base, end.end())]
            if not words:
                continue
            self._units.push(" ".join(words), start, base + end.end())
            self._unit_words.append(len(words))
            for period in range(1, MAX_BLOCK_UNITS + 1):
                copies = self._units.runs[period] // period + 1
                if copies >= BLOCK_COPIES and sum(list(self._unit_words)[-period:]) >= MIN_BLOCK_WORDS:
                    return self._repetition(self._units, period, copies)
        self._scan_at = max(self._unit_at, base + len(text) - 4)
        if self._scan_at - self._unit_at > _KEEP_AT_LEAST:     # no sentence is that long: the text has none
            self._unit_at = self._scan_at
        return None

    def _repetition(self, tail: _Tail, period: int, copies: int) -> Repetition:
        start, end = tail.first_copy(period)
        return Repetition(keep=end, block=self._text[start - self._base:end - self._base].strip(), copies=copies)


def repeat_at_cut(text: str) -> Repetition | None:
    """The loop an answer cut at the token limit ends in, if it ends in one: its last words repeat, word for
    word (case-folded), the `period` words before them, over at least a whole period of `CUT_MIN_WORDS` words or
    more (the smallest such period; the last word may be cut short). Keep text[:keep]: what came before and one
    copy, to the end of its last word's punctuation."""
    words = list(_WORD.finditer(text))[-CUT_WINDOW_WORDS:]
    keys = [w.group().casefold() for w in words]
    count = len(keys)
    for period in range(CUT_MIN_WORDS, count // 2 + 1):
        same = int(keys[count - 1 - period].startswith(keys[-1]))     # the cut may fall inside the last word
        while same < count - period and keys[count - 1 - same] == keys[count - 1 - same - period]:
            same += 1
        if same >= period:
            first = count - same - period
            keep = words[first + period - 1].end()
            keep += len(text[keep:]) - len(text[keep:].lstrip(_CLOSING))
            return Repetition(keep=keep, block=text[words[first].start():keep].strip(),
                              copies=(same + period) // period)
    return None
