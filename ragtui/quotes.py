"""Quotes checked against the text they claim to come from: a model's quote is a claim, not evidence.

A model may put words in quotation marks that its source never said, or say a
source said what another one (a document posing as a source) did. So every passage
a model quotes is looked up in the text it is attributed to: an answer's quote in
the source its citation names, an annotation's quote in the chunk it annotates.

The comparison is on words: Unicode compatibility-folded, case-folded, so whitespace,
line breaks, punctuation, markdown, prompt markers such as ">>>" and the kind of
quotation mark or apostrophe never decide it. An ellipsis ("...", "…", "[...]") or
a citation ("[2]") inside the quote splits it into parts that must all occur, in
order; a bracket of words is read first as the quoted text's own and only then as
an editor's insertion ("[the pump] starts"), which also splits it; any other
bracket (a Python list, an index) is the quoted text's own. `occurs` is the one
matcher: the MCP server's `verify_quote`, an annotation's "no quote" mark
(`found_quotes`) and an answer's quote checks all use it, so none of them can find
a quote another misses.

What an answer or an annotation is held to: text between "double", “curly” or
«angle» quotation marks with at least `MIN_WORDS` words is a quotation its source
must hold (`misquotes`, `check_quotes`: a shorter one is a term, not a claim). What
an annotation gives as evidence (`found_quotes`) has no floor: a two-word heading
it quotes, and its chunk holds, is a quote.

Pure functions, no I/O: the engine checks, the front ends only show the result.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Protocol

from ragtui.words import FUNCTION_WORDS

MIN_WORDS = 3
_QUOTED = re.compile(r'"([^"]{1,2000}?)"|“([^”]{1,2000}?)”|«([^»]{1,2000}?)»')
_ELISION = re.compile(r"\.\.\.|…|\[\s*\d+(?:\s*[-–,;]\s*\d+)*\s*\]")   # an ellipsis, "[...]" too, or a citation
_INSERTION = re.compile(r"\[[^\W\d_][\w \t'’-]*\]")      # "[sic]", "[the pump]": words, not code
_STRAIGHT = re.compile(r'"')
MAX_MARKS = 24      # straight quotation marks of one paragraph paired every way (quotes inside quotes)
_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’»)\]]*(?=\s|$|\[\d)|\n")
_MARKED = re.compile(r"(?P<quote>(?:^[ \t]*>.*(?:\n|$))+)|```[^\n]*\n(?P<code>[\s\S]*?)```|`(?P<span>[^`\n]+)`",
                     re.MULTILINE)
_BLOCKQUOTE_MARK = re.compile(r"^[ \t]*>[ \t]?", re.MULTILINE)
UNMARKED_WORDS = 8    # an unmarked run this long, word for word from the chunk, is a quote, not a coincidence
_PARAGRAPH = re.compile(r"\n[ \t]*\n")


class Cited(Protocol):
    """A citation found in an answer: answer[start:end] is its bracket, `numbers` the sources it names."""

    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def numbers(self) -> tuple[int, ...]: ...


@dataclass(frozen=True)
class QuoteCheck:
    """One passage an answer quotes and attributes to sources, and where it was actually found.

    Its `state` is the judgement every front end reports: `verified` (a cited source holds it),
    `misattributed` (no cited source holds it, another source of the same answer does: the quote is real,
    the citation wrong) or `not_found` (no source holds it)."""

    quote: str
    cited: tuple[int, ...]          # the sources its citation names
    found_in: tuple[int, ...]       # the sources whose text holds it (any of those checked)
    cite_at: int = -1               # where the attributing citation starts in the answer

    @property
    def verified(self) -> bool:
        return any(n in self.found_in for n in self.cited)

    @property
    def state(self) -> str:
        return "verified" if self.verified else "misattributed" if self.found_in else "not_found"

    @property
    def verdict(self) -> str:
        """The judgement in words: "verified in [2]", "misattributed to [2], found in [5]" or
        "not found in [2] nor in any other source"."""
        cited = _refs(self.cited)
        if self.verified:
            return f"verified in {_refs(tuple(n for n in self.cited if n in self.found_in))}"
        if self.found_in:
            return f"misattributed to {cited}, found in {_refs(self.found_in)}"
        return f"not found in {cited} nor in any other source"

    def to_json(self) -> dict[str, object]:
        return {"quote": self.quote, "cited": list(self.cited), "found_in": list(self.found_in),
                "verified": self.verified, "state": self.state, "verdict": self.verdict}


def _refs(numbers: tuple[int, ...]) -> str:
    return " ".join(f"[{n}]" for n in numbers)


def check_quote(quote: str, cited: tuple[int, ...], texts: Mapping[int, str], cite_at: int = -1) -> QuoteCheck:
    """`quote`, attributed to the sources `cited`, looked up in every one of `texts` (source number -> text)."""
    return QuoteCheck(quote.strip(), cited, tuple(n for n, text in sorted(texts.items()) if occurs(quote, text)),
                      cite_at)


@lru_cache(maxsize=512)
def _words(text: str) -> str:
    """The text as " word word word ", folded: the form every comparison is made on."""
    return " " + " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold())) + " "


def _parts(quote: str, gap: re.Pattern[str] = _ELISION) -> list[str]:
    return [words for piece in gap.split(quote) if (words := _words(piece)).strip()]


def _word_count(quote: str) -> int:
    return sum(len(part.split()) for part in _parts(quote))


def occurs(quote: str, text: str) -> bool:
    """Whether every part of `quote` occurs in `text`, whole words, in order: its brackets read as its own
    text, or else (when it has any) as insertions an editor made, which the text need not hold."""
    haystack = _words(text)
    return _in_order(_parts(quote), haystack) or (
        _INSERTION.search(quote) is not None and _in_order(_parts(_INSERTION.sub("...", quote)), haystack))


def _in_order(parts: list[str], haystack: str) -> bool:
    at = 0
    for part in parts:
        found = haystack.find(part, at)
        if found < 0:
            return False
        at = found + len(part) - 1
    return True


def quoted_passages(text: str) -> list[tuple[int, int, str]]:
    """(start, end, quote) for each passage in quotation marks long enough to be a quotation."""
    found = []
    for match in _QUOTED.finditer(text):
        quote = next(g for g in match.groups() if g is not None)
        if _word_count(quote) >= MIN_WORDS:
            found.append((match.start(), match.end(), quote))
    return found


def misquotes(annotation: str, text: str) -> tuple[str, ...]:
    """The quotes of an annotation that its chunk's text does not hold (none quoted: nothing to flag)."""
    return tuple(quote for _, _, quote in quoted_passages(annotation) if not occurs(quote, text))


def found_quotes(annotation: str, text: str) -> tuple[str, ...]:
    """The passages of an annotation that quote its chunk's `text`, in order of appearance.

    A quote is a passage in quotation marks (quotes inside it included), a block quote ("> " lines)
    or a code span or fenced block that `occurs` in the text, however short (if it has a word that is not a
    function word: "the" quotes nothing): a heading such as
    "Frozen instances" that the chunk holds is the evidence `verify_quote` would confirm. Or, unmarked,
    a run of `UNMARKED_WORDS` words in a row that the text holds in that order (a model that copies a
    sentence without marking it still quotes). Code, an echo of the prompt or a paraphrase gives none.
    """
    found = [(start, quote.strip()) for start, quote in _marked_quotes(annotation) if occurs(quote, text)]
    for match in _MARKED.finditer(annotation):
        block = (_BLOCKQUOTE_MARK.sub("", match.group("quote")) if match.group("quote")
                 else match.group("code") or match.group("span"))
        if _says_something(block) and occurs(block, text):
            found.append((match.start(), block.strip()))
    unmarked = _MARKED.sub(lambda m: " " * len(m.group()), _QUOTED.sub(lambda m: " " * len(m.group()), annotation))
    found += _unmarked(unmarked, text)
    return tuple(dict.fromkeys(quote for _, quote in sorted(found)))


def _marked_quotes(annotation: str) -> list[tuple[int, str]]:
    """(start, passage) for every passage in quotation marks with at least one word, and for straight marks,
    which open and close alike, every span from an opening mark to a later closing one of its paragraph:
    '"The docs say "frozen=True" makes them immutable"' is one quote with a quote inside."""
    found = [(m.start(), next(g for g in m.groups() if g is not None)) for m in _QUOTED.finditer(annotation)]
    breaks = [0, *(m.end() for m in _PARAGRAPH.finditer(annotation)), len(annotation)]
    for start, end in pairwise(breaks):
        marks = [m.start() for m in _STRAIGHT.finditer(annotation, start, end)][:MAX_MARKS]
        found += [(marks[i], annotation[marks[i] + 1:marks[j]])
                  for i in range(0, len(marks), 2) for j in range(i + 3, len(marks), 2)]
    return [(start, quote) for start, quote in found if _says_something(quote)]


def _says_something(passage: str) -> bool:
    """Whether a passage has a word other than a function word: quoting "the" or "it is" quotes nothing."""
    return any(word not in FUNCTION_WORDS for part in _parts(passage) for word in part.split())


def quoteless(annotation: str, text: str) -> bool:
    """Whether an annotation gives no quote its chunk's `text` holds (`found_quotes`)."""
    return not found_quotes(annotation, text)


def _unmarked(annotation: str, text: str) -> list[tuple[int, str]]:
    """(start, passage) for each longest run of at least UNMARKED_WORDS words of `annotation` that `text`
    holds, run by run; linear in both (a set of the text's runs of that many words)."""
    words = list(_WORD.finditer(unicodedata.normalize("NFKC", annotation).casefold()))
    folded = _words(text).split()
    runs = {tuple(folded[i:i + UNMARKED_WORDS]) for i in range(len(folded) - UNMARKED_WORDS + 1)}
    found, i = [], 0
    while i + UNMARKED_WORDS <= len(words):
        if tuple(w.group() for w in words[i:i + UNMARKED_WORDS]) not in runs:
            i += 1
            continue
        end = i + UNMARKED_WORDS
        while end < len(words) and tuple(w.group() for w in words[end + 1 - UNMARKED_WORDS:end + 1]) in runs:
            end += 1
        found.append((words[i].start(), " ".join(w.group() for w in words[i:end])))
        i = end
    return found


def check_quotes(answer: str, citations: Sequence[Cited], texts: Mapping[int, str]) -> tuple[QuoteCheck, ...]:
    """Every quote of `answer` that a citation attributes to sources, looked up in all of `texts`.

    The attributing citation is the one its sentence gives it (`_attribution`). A quote no citation
    attributes is not checked: it claims no source.
    """
    sentences = _Sentences(answer, citations)
    checks = []
    for start, end, quote in quoted_passages(answer):
        at, cited = sentences.attribution(start, end)
        if cited:
            checks.append(check_quote(quote, cited, texts, at))
    return tuple(checks)


def cited_sentences(answer: str, citations: Sequence[Cited]) -> list[tuple[int, int, tuple[int, ...]]]:
    """(start, end, the sources it cites) for each sentence of `answer` that cites any, its citation runs read
    as `check_quotes` reads them (a run right after a full stop may cite the sentence before)."""
    return _Sentences(answer, citations).cited()


class _Sentences:
    """An answer cut into sentences, each with the citation runs that belong to it.

    A sentence ends at ".", "!" or "?" before whitespace, or at a line break; full stops inside
    quotation marks do not end it. A run of citations ("[1][2]", "[1], [3]", "[1, 2]") belongs to the
    sentence it sits in, except a run that opens a line's next sentence right after a full stop and is
    not its subject: '... "the quoted words". [3]' and '"..." [3]. Next' cite the sentence before;
    '"...". [2] says "..."' (a lower-case word or a comma follows the run) cites the sentence it opens.
    A paragraph break, or a line break before the run, always separates.
    """

    def __init__(self, answer: str, citations: Sequence[Cited]) -> None:
        self.answer = answer
        masked = _QUOTED.sub(lambda m: m.group() if _PARAGRAPH.search(m.group()) else "x" * len(m.group()),
                             answer)
        self.starts = [0] + [m.end() for m in _SENTENCE_END.finditer(masked)]
        self.runs: dict[int, list[tuple[int, int, tuple[int, ...]]]] = {}   # sentence -> (start, end, numbers)
        for start, end, numbers in _runs(answer, citations):
            sentence = bisect_right(self.starts, start) - 1
            opening = self.starts[sentence]
            if (sentence and answer[opening - 1] != "\n" and not answer[opening:start].strip(" \t")
                    and not _is_subject(answer[end:end + 80].lstrip(" \t"))):
                sentence -= 1
            self.runs.setdefault(sentence, []).append((start, end, numbers))

    def cited(self) -> list[tuple[int, int, tuple[int, ...]]]:
        ends = [*self.starts[1:], len(self.answer)]
        return [(self.starts[i], ends[i], tuple(dict.fromkeys(n for _, _, numbers in runs for n in numbers)))
                for i, runs in sorted(self.runs.items())]

    def attribution(self, start: int, end: int) -> tuple[int, tuple[int, ...]]:
        """(where the attributing run starts, the sources it names) for the quote answer[start:end]: the
        first run of its sentence after it, else the last one before it, with no other quotation between;
        (-1, ()) when there is none or the quote spans a paragraph break."""
        if _PARAGRAPH.search(self.answer, start, end):
            return -1, ()
        mine = self.runs.get(bisect_right(self.starts, start) - 1, [])
        for run_start, _, numbers in mine:
            if run_start >= end and not _has_quote(self.answer[end:run_start]):
                return run_start, numbers
        for run_start, run_end, numbers in reversed(mine):
            if run_end <= start and not _has_quote(self.answer[run_end:start]):
                return run_start, numbers
        return -1, ()


def _runs(answer: str, citations: Sequence[Cited]) -> list[tuple[int, int, tuple[int, ...]]]:
    """(start, end, numbers) of each run of citations with nothing but spaces, commas or semicolons between."""
    runs: list[tuple[int, int, tuple[int, ...]]] = []
    for cite in citations:
        if runs and not answer[runs[-1][1]:cite.start].strip(" ,;"):
            start, _, numbers = runs[-1]
            runs[-1] = (start, cite.end, tuple(dict.fromkeys(numbers + tuple(cite.numbers))))
        else:
            runs.append((cite.start, cite.end, tuple(dict.fromkeys(cite.numbers))))
    return runs


def _is_subject(after: str) -> bool:
    """Whether the text right after a citation run goes on with it ("[2] says", "[2], in turn,")."""
    return bool(after) and (after[0] in ",:;" or after[0].islower())


def _has_quote(gap: str) -> bool:
    return bool(_QUOTED.search(gap)) or '"' in gap
