"""The most relevant window of a chunk (`llm/window.py`), shared by the annotator, packing and the viewer."""

from __future__ import annotations

from ragtui.llm.annotate import DEFAULT_PROMPT, build_prompt
from ragtui.llm.window import WINDOW_CHARS, best_window

FILLER = ("The manual covers installation on several systems and explains the terminal settings in detail. "
          "Colours, fonts and line widths can be chosen for every output device that the program supports. ")
ANSWER = ("To plot on a logarithmic scale, use set logscale followed by the axis name, for example set "
          "logscale y. The command unset logscale returns the axis to a linear scale. ")


def crafted_chunk() -> tuple[str, int]:
    """~8,400 chars of unrelated manual prose with the passage asked for at char ~7,600."""
    head = FILLER * 40
    return head + ANSWER + FILLER * 3, len(head)


def test_window_is_around_the_matching_sentences_not_the_opening() -> None:
    text, at = crafted_chunk()
    start, end = best_window(text, "How do I use a logarithmic scale (logscale) on the y axis?", WINDOW_CHARS)
    assert end - start <= WINDOW_CHARS
    assert start <= at and at + len(ANSWER) <= end          # the whole answer passage is inside
    assert start > 7000                                      # not the first 1,200 chars
    assert text[start].isupper()                             # starts on a sentence
    middle = (start + end) / 2
    assert abs(middle - (at + len(ANSWER) / 2)) < WINDOW_CHARS / 2   # roughly centred on it


def test_window_falls_back_to_the_opening_and_keeps_short_texts_whole() -> None:
    text, _ = crafted_chunk()
    start, end = best_window(text, "zyzzyva quokka", 1200)   # no content word in common
    assert start == 0 and 1000 < end <= 1200 and text[end - 1] == "."
    assert best_window("Short text.", "logscale", 1200) == (0, 11)
    start, end = best_window(text, "how do what is", 1200)   # question words alone match nothing
    assert start == 0


def test_question_words_do_not_pull_the_window() -> None:
    text = ("What is this? How do you do it? " * 60) + "Turbine blades are cooled by bleed air. " + "Filler. " * 200
    start, end = best_window(text, "how do turbine blades get cooled", 600)
    assert "Turbine blades are cooled by bleed air." in text[start:end]


def test_the_annotator_reads_the_window() -> None:
    text, _ = crafted_chunk()
    prompt = build_prompt(DEFAULT_PROMPT, text, "how to set a logscale axis")
    assert "logscale" not in text[:1200]                    # RAGWeed's first 1,200 chars would miss it
    assert "set logscale followed by the axis name" in prompt
    assert len(prompt) <= len(DEFAULT_PROMPT) + WINDOW_CHARS + len("\n<<<\n\n>>>")
