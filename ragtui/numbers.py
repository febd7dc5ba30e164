"""Numbers an answer states, checked against the sources it cites: a model may write "87%" where its source says
"85%", and quote no words that would give it away.

Each sentence of an answer that cites sources (its citations read as the quote check reads them,
`quotes.cited_sentences`) is searched for quantities, and each is looked up among the quantities of the
cited chunks' texts. A quantity is a value and a unit:

- the value is the number as written, separators and scale words folded: "1,500,000", "1500000",
  "1.5 million" and "1.5 mn" are one value; "1.50" is "1.5"; a minus sign ("-5", "−5") is kept; a range
  ("10-20", "10–20") is two quantities with the range's unit; an ISO date ("2021-03-04") is one;
- the unit is a percent sign ("85%", "85 percent", "85 per cent" are one), a currency sign before it
  ("$4.2 million"), or a unit of measure right after it ("90 bar", "3 km", "12 hours"); a plain integer from
  1000 to 2999 written without separators is a year.

A stated quantity is held when a cited text has the same value with the same unit, or with no unit on either
side (a table's "85" under a "%" heading holds "85%"). One not held is flagged; with it goes the nearest
quantity of the same unit the cited texts hold, when one is within half its size ("85% in [3], the answer says
87%").

What is not a number: digits inside a word or an id ("v2", "COVID-19", "a3f9c2e", "2nd", "ISBN 978-3-16"),
a citation ("[3]"), a section number ("3.2.1"), a time ("10:30"), a list item's number at a line's start, and
in an answer, a bare integer below 10 with no unit or a number written as a word ("two steps": a count a
sentence restates in its own words, not a figure it reports), though the sources' number words ("three
days") hold a stated figure.

Pure functions, no I/O, no model: the engine checks, the front ends show the result.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from ragtui.quotes import Cited, cited_sentences

_SCALES = {"thousand": 10**3, "million": 10**6, "mn": 10**6, "billion": 10**9, "bn": 10**9, "trillion": 10**12}
# Units of measure, each with the name it is compared by (plural and short forms folded).
_UNITS = {
    **{u: u for u in ("km", "cm", "mm", "µm", "nm", "kg", "mg", "µg", "ml", "ms", "µs", "ns", "kw", "mw", "gw",
                      "mv", "ma", "hz", "khz", "mhz", "ghz", "kb", "mb", "gb", "tb", "bar", "mbar", "psi", "pa",
                      "kpa", "mpa", "kwh", "rpm", "°c", "°f", "°")},
    "m": "meter", "g": "gram", "l": "litre", "s": "second", "w": "w", "v": "v", "x": "x",
    **{w: "second" for w in ("second", "seconds", "sec", "secs")},
    **{w: "minute" for w in ("minute", "minutes", "min", "mins")},
    **{w: "hour" for w in ("hour", "hours", "h", "hr", "hrs")},
    **{w: "day" for w in ("day", "days")}, **{w: "week" for w in ("week", "weeks")},
    **{w: "month" for w in ("month", "months")}, **{w: "year" for w in ("year", "years")},
    **{w: "times" for w in ("times", "fold")},
    **{w: "meter" for w in ("meter", "meters", "metre", "metres")},
    **{w: "kg" for w in ("kilogram", "kilograms")}, **{w: "km" for w in ("kilometer", "kilometers", "kilometre",
                                                                        "kilometres")},
    **{w: "%" for w in ("%", "percent", "per cent", "pct")},
}
_WORD_NUMBERS = {w: i for i, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"))}
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
_UNIT = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_SCALE = "|".join(sorted(_SCALES, key=len, reverse=True))
_QUANTITY = re.compile(
    r"(?<![\w.,:/\-–−#@$€£¥])"                                 # not inside a word, an id or another number
    r"(?:(?P<date>\d{4}-\d{2}-\d{2})"
    r"|(?P<cur>[$€£¥])?(?P<neg>[-−](?=[\d.]))?(?P<num>" + _NUM + r")"
    r"(?:[-–](?P<to>" + _NUM + r"))?"                           # a range: 10-20, 10–20
    r"(?:\s?(?P<scale>" + _SCALE + r")\b)?"
    r"(?:\s?(?P<unit>" + _UNIT + r")(?![\w]))?)"
    r"(?![\w]|[.,:]\d|[-–]\d)",                                 # nor followed by more of a word, id or number
    re.IGNORECASE)
_WORDED = re.compile(r"\b(?P<word>" + "|".join(_WORD_NUMBERS) + r")\s+(?P<unit>" + _UNIT + r")(?![\w])",
                     re.IGNORECASE)
_CITATION = re.compile(r"\[\s*\d+(?:\s*[-–,;]\s*\d+)*\s*\]")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?\d+[.)](?=\s)", re.MULTILINE)
_NEAR = Decimal("0.5")          # a nearest quantity is named only within half the stated one's size


@dataclass(frozen=True)
class Quantity:
    """A number as a text states it: `written` as it stands, `value` folded, `unit` ("" for none)."""

    written: str
    value: Decimal
    unit: str
    start: int = 0
    bare: bool = False          # an integer below 10 with no unit, or a number word: a count, not a figure

    def holds(self, other: Quantity) -> bool:
        """Whether this quantity of a source holds `other`, one an answer states."""
        return self.value == other.value and (self.unit == other.unit or not self.unit or not other.unit)


@dataclass(frozen=True)
class NumberCheck:
    """A quantity an answer's sentence states that none of the sources it cites holds."""

    stated: str                 # as the answer writes it
    start: int                  # where it stands in the answer
    cited: tuple[int, ...]      # the sources the sentence cites
    sentence: str               # the sentence, as written
    near: str = ""              # the nearest quantity of the same unit a cited source holds, as written there
    near_in: int = 0            # the source that holds it

    @property
    def verdict(self) -> str:
        """"85% in [3], the answer says 87%", or "the answer says 87%, which [3] does not hold"."""
        if self.near:
            return f"{self.near} in [{self.near_in}], the answer says {self.stated}"
        cited = " ".join(f"[{n}]" for n in self.cited)
        return f"the answer says {self.stated}, which {cited} {'does' if len(self.cited) == 1 else 'do'} not hold"

    def to_json(self) -> dict[str, object]:
        return {"stated": self.stated, "cited": list(self.cited), "sentence": self.sentence,
                "near": self.near, "near_in": self.near_in or None, "verdict": self.verdict}


def _blank(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(lambda m: " " * len(m.group()), text)


def _value(digits: str) -> Decimal | None:
    try:
        return Decimal(digits.replace(",", ""))
    except InvalidOperation:
        return None


@lru_cache(maxsize=256)
def quantities(text: str) -> tuple[Quantity, ...]:
    """Every quantity `text` states, in order (citations and list items' numbers are not quantities)."""
    text = _blank(_LIST_ITEM, _blank(_CITATION, text))
    found = [Quantity(m.group(), Decimal(_WORD_NUMBERS[m.group("word").lower()]),
                      _UNITS.get(m.group("unit"), _UNITS.get(m.group("unit").lower(), "")), m.start(), True)
             for m in _WORDED.finditer(text)]
    for match in _QUANTITY.finditer(text):
        found += _read(match)
    return tuple(sorted(found, key=lambda q: q.start))


def _read(match: re.Match[str]) -> list[Quantity]:
    written = match.group().strip()
    if match.group("date"):
        return [Quantity(written, Decimal(match.group("date").replace("-", "")), "date", match.start())]
    scale = Decimal(_SCALES[match.group("scale").lower()]) if match.group("scale") else Decimal(1)
    unit = match.group("unit") or ""
    unit = _UNITS.get(unit, _UNITS.get(unit.lower(), "")) if unit else match.group("cur") or ""
    sign = -1 if match.group("neg") else 1
    found = []
    for digits in (match.group("num"), match.group("to")):
        value = _value(digits) if digits else None
        if value is None:
            continue
        value = (sign * value * scale).normalize()
        sign = 1
        year = (not unit and scale == 1 and digits.isdigit() and len(digits) == 4 and 1000 <= value <= 2999)
        bare = not unit and scale == 1 and digits.isdigit() and 0 <= value < 10
        found.append(Quantity(written, value, "year" if year else unit, match.start(), bare))
    return found


def check_numbers(answer: str, citations: Sequence[Cited], texts: Mapping[int, str]) -> tuple[NumberCheck, ...]:
    """Every quantity a sentence of `answer` states that none of the sources its citations name holds (`texts`:
    source number -> text); a sentence citing no source it was given is not checked."""
    checks = []
    for start, end, cited in cited_sentences(answer, citations):
        given = tuple(n for n in cited if n in texts)
        if not given:
            continue
        held = [(n, q) for n in given for q in quantities(texts[n])]
        sentence = answer[start:end]
        for stated in quantities(sentence):
            if stated.bare or any(q.holds(stated) for _, q in held):
                continue
            near = _nearest(stated, held)
            checks.append(NumberCheck(stated.written, start + stated.start, given, " ".join(sentence.split()),
                                      *(near or ("", 0))))
    return tuple(checks)


def _nearest(stated: Quantity, held: list[tuple[int, Quantity]]) -> tuple[str, int] | None:
    """(as written, source) of the held quantity of `stated`'s unit nearest to it, within half its size."""
    same = [(abs(q.value - stated.value), n, q) for n, q in held if q.unit == stated.unit and not q.bare]
    close = [(d, n, q) for d, n, q in same if d <= _NEAR * max(abs(stated.value), abs(q.value))]
    if not close:
        return None
    _, number, quantity = min(close, key=lambda c: c[0])
    return quantity.written, number
