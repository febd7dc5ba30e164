"""The number check's table: what counts as a number, what value and unit it has, and which stated numbers a
cited source holds. The CLI's use of it (warning lines, --json) is tested in tests/test_answer_numbers.py."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import pytest

from ragtui.numbers import check_numbers, quantities


@dataclass(frozen=True)
class Span:
    """A citation as `llm.citations.citation_spans` gives it."""

    start: int
    end: int
    numbers: tuple[int, ...]


def spans(answer: str) -> list[Span]:
    import re

    return [Span(m.start(), m.end(), tuple(int(n) for n in re.findall(r"\d+", m.group())))
            for m in re.finditer(r"\[\d+(?:,\s*\d+)*\]", answer)]


# text -> the (value, unit) of every quantity in it, in order
READ = [
    ("thousands separators", "1,500,000 people", [("1500000", "")]),
    ("plain digits", "1500000 people", [("1500000", "")]),
    ("a scale word", "1.5 million people", [("1500000", "")]),
    ("a scale word, billions", "2 billion", [("2000000000", "")]),
    ("a decimal", "a pH of 7.25 or 0.5", [("7.25", ""), ("0.5", "")]),
    ("trailing zeros", "2.50 mm", [("2.5", "mm")]),
    ("percent sign", "85% of them", [("85", "%")]),
    ("percent word", "85 percent and 85 per cent", [("85", "%"), ("85", "%")]),
    ("a range with a hyphen", "10-20 bar", [("10", "bar"), ("20", "bar")]),
    ("a range with an en dash", "10–20%", [("10", "%"), ("20", "%")]),
    ("a spaced range", "from 10 – 20", [("10", ""), ("20", "")]),
    ("negative, hyphen", "it fell to -5 °C", [("-5", "°c")]),
    ("negative, minus sign", "−3.5 bar", [("-3.5", "bar")]),
    ("a year", "in 2019 the", [("2019", "year")]),
    ("an ISO date", "on 2021-03-04 it", [("20210304", "date")]),
    ("a currency", "$4.2 million", [("4200000", "$")]),
    ("units folded", "12 hours, 12 h, 3 km, 3 kilometres", [("12", "hour"), ("12", "hour"), ("3", "km"),
                                                             ("3", "km")]),
    ("a number word with a unit", "three days", [("3", "day")]),
    ("a version", "v2 and v3.1", []),
    ("an illness's name", "COVID-19 spread", []),
    ("a SHA-like id", "commit a3f9c2e and 9e4b7d1f", []),
    ("an ordinal", "the 2nd and 21st", []),
    ("a citation", "as [3] and [1, 2] say", []),
    ("a section number", "see section 3.2.1.", []),
    ("a time", "at 10:30", []),
    ("an ISBN", "ISBN 978-3-16-148410-0", []),
    ("a list item's number", "1. first\n2) second", []),
    ("a path or a URL", "see /api/v1/2019 and #42", []),
]


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in READ], ids=[c for c, _, _ in READ])
def test_quantities_read(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(q.value, q.unit) for q in quantities(text)] == [(Decimal(v), u) for v, u in expected]


# (what the cited source [1] says, what the answer states with [1], the verdicts flagged: [] = held)
CHECKED = [
    ("the same figure", "Sales rose 85% in 2019.", "Sales rose 85% in 2019 [1].", []),
    ("a changed percentage, named with the near one", "Sales rose 85% in 2019.", "Sales rose 87% in 2019 [1].",
     ["85% in [1], the answer says 87%"]),
    ("a changed year", "It opened in 2019.", "It opened in 2021 [1].", ["2019 in [1], the answer says 2021"]),
    ("separators against a scale word", "About 1,500,000 people live there.",
     "About 1.5 million people live there [1].", []),
    ("a scale word against plain digits", "About 1.5 million people.", "About 1500000 people [1].", []),
    ("a percent word against a sign", "The yield was 85 percent.", "The yield was 85% [1].", []),
    ("trailing zeros", "The gap is 2.50 mm.", "The gap is 2.5 mm [1].", []),
    ("a range's ends", "Pumps run at 10–20 bar.", "Pumps run at 10-20 bar [1].", []),
    ("a changed range end", "Pumps run at 10–20 bar.", "Pumps run at 10-25 bar [1].",
     ["10–20 bar in [1], the answer says 10-25 bar"]),
    ("a negative number", "It froze at -5 °C.", "It froze at −5 °C [1].", []),
    ("a sign dropped", "It froze at -5 °C.", "It froze at 5 °C [1].",
     ["the answer says 5 °C, which [1] does not hold"]),
    ("a number word in the source", "It takes three days.", "It takes 3 days [1].", []),
    ("a unit the source does not give", "The table lists 85 under the percent column.",
     "85% of them [1].", []),
    ("no near figure of that unit", "Pumps run at 10 bar.", "Pumps run at 400 kg [1].",
     ["the answer says 400 kg, which [1] does not hold"]),
    ("a small count is no figure", "Pumps have an impeller.", "There are 2 steps [1].", []),
    ("ids and citations are not numbers", "COVID-19 spread in v2.", "COVID-19 spread in v2, see 3.2.1 [1].", []),
    ("a date", "Signed on 2021-03-04.", "Signed on 2021-03-05 [1].",
     ["2021-03-04 in [1], the answer says 2021-03-05"]),
]


@pytest.mark.parametrize(("source", "answer", "flagged"), [(s, a, f) for _, s, a, f in CHECKED],
                         ids=[c for c, _, _, _ in CHECKED])
def test_a_stated_number_is_looked_up_in_the_cited_source(source: str, answer: str, flagged: list[str]) -> None:
    assert [c.verdict for c in check_numbers(answer, spans(answer), {1: source})] == flagged


def test_only_the_cited_sources_are_searched_and_an_uncited_sentence_is_not_checked() -> None:
    texts = {1: "Pumps run at 10 bar.", 2: "Valves open at 12 bar."}
    answer = "Valves open at 12 bar [1]. Pumps run at 10 bar [1]. Seals last 40 hours."
    (check,) = check_numbers(answer, spans(answer), texts)
    assert (check.stated, check.cited, check.near, check.near_in) == ("12 bar", (1,), "10 bar", 1)
    assert answer[check.start:].startswith("12 bar")
    assert check.sentence == "Valves open at 12 bar [1]."
    both = "Valves open at 12 bar [1][2]."
    assert check_numbers(both, spans(both), texts) == ()
    assert check_numbers("It runs at 99 bar [7].", spans("It runs at 99 bar [7]."), texts) == ()
