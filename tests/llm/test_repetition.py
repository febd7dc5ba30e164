"""A degenerate repetition caught while the answer streams: which tails are loops, and what is kept."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from ragtui.config import Settings
from ragtui.llm.providers import synthesis_model
from ragtui.llm.repetition import _KEEP_AT_LEAST, MIN_LOOP_SPAN, Repetition, RepetitionWatch
from tests.fake_openai import FakeOpenAI
from tests.model_habits import LOOP_INTRO, LOOP_PARAGRAPH, loops

PARAGRAPH = ("A primed pump starts at about 3 bar [1]. The relief valve opens at 12 bar [2]. "
             "Running it dry wears its seals [2].")


def _watch(pieces: list[str]) -> tuple[str, Repetition | None, int]:
    """The text fed to a watch piece by piece until it found a loop, what it found, and after how many pieces."""
    watch = RepetitionWatch()
    for count, piece in enumerate(pieces, 1):
        if found := watch.feed(piece):
            return "".join(pieces[:count]), found, count
    return "".join(pieces), None, len(pieces)


def _tokens(text: str) -> list[str]:
    """Text cut as a model streams it: a word and its trailing space or punctuation at a time."""
    return [text[i:i + 5] for i in range(0, len(text), 5)]


def test_a_paragraph_written_again_and_again_stops_at_its_third_copy_keeping_one() -> None:
    intro = "Pumps need priming [1].\n\n"
    text = intro + "\n\n".join([PARAGRAPH] * 10)
    text, found, count = _watch(_tokens(text))
    assert found is not None and found.copies == 3 and found.block == PARAGRAPH
    assert text[:found.keep] == intro + PARAGRAPH
    assert len("".join(_tokens(text)[:count])) < len(intro) + 3 * len(PARAGRAPH) + 20   # seen early, not at the end


def test_a_sentence_said_three_times_running_is_a_loop_twice_is_not() -> None:
    sentence = "The relief valve opens at twelve bar of pressure [2]. "
    assert _watch(_tokens("Valves. " + sentence * 2 + "Then it closes again."))[1] is None
    text, found, _ = _watch(_tokens("Valves. " + sentence * 3 + "Then"))
    assert found is not None and text[:found.keep] == "Valves. " + sentence.rstrip()


def test_a_short_loop_of_words_without_a_full_stop() -> None:
    text = "The pump starts and then " + "and then " * 40
    text, found, _ = _watch(_tokens(text))
    assert found is not None and found.block == "and then"
    assert text[:found.keep] == "The pump starts and then"
    text, found, _ = _watch(_tokens("It was " + "very " * 40))
    assert found is not None and text[:found.keep] == "It was very"


def test_ordinary_answers_are_not_loops() -> None:
    answer = ("Pumps must be primed [1]. A primed pump starts at 3 bar [1]. A primed fan starts at 2 bar [3].\n\n"
              "- Pump A starts at 3 bar [1].\n- Pump B starts at 3 bar [2].\n- Pump C starts at 4 bar [2].\n\n"
              "It is very, very important: check, check and check again. Yes. Yes. Yes. Yes.\n\n"
              "Values: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1. " + PARAGRAPH + "\n\n" + PARAGRAPH + "\n\nIn short, prime it.")
    assert _watch(_tokens(answer))[1] is None
    assert _watch([answer])[1] is None


@given(st.lists(st.integers(1, 40), min_size=1, max_size=200))
def test_where_the_pieces_are_cut_does_not_change_the_verdict(cuts: list[int]) -> None:
    text = "Intro sentence here [1].\n\n" + "\n\n".join([PARAGRAPH] * 5)
    pieces, at = [], 0
    for size in cuts:
        pieces.append(text[at:at + size])
        at += size
    pieces.append(text[at:])
    text, found, _ = _watch(pieces)
    assert found is not None and text[:found.keep] == "Intro sentence here [1].\n\n" + PARAGRAPH


def test_the_watch_keeps_a_bounded_window_however_long_the_answer() -> None:
    """Memory, and so the work of each piece, stays bounded on a long answer, with sentences or without."""
    for sentence in ("Sentence number {i} says something new about pump {i}. ", "word{i} and{i} "):
        watch = RepetitionWatch()
        for i in range(5000):
            assert watch.feed(sentence.format(i=i)) is None
        assert len(watch._text) < 3 * _KEEP_AT_LEAST
        assert len(watch._words.keys) <= MIN_LOOP_SPAN * 3 and len(watch._units.keys) <= 16 * 3 + 1
    before = "Intro. " + " ".join(f"w{i}" for i in range(3000)) + ".\n"
    text, found, _ = _watch(_tokens(before + "The pump starts at 3 bar [1] again. " * 3 + "More."))
    assert found is not None and text[:found.keep] == before + "The pump starts at 3 bar [1] again."


async def test_a_looping_answer_from_a_server_is_caught_as_it_streams(make_settings: Callable[..., Settings]) -> None:
    """Over HTTP from the fake OpenAI-compatible server, with the looping habit."""
    server = FakeOpenAI().start()
    server.responder = loops
    try:
        settings = make_settings("llm.provider=openai", f"llm.base_url={server.url}", "llm.model=served-model")
        model = await synthesis_model(settings)
        watch, found, streamed = RepetitionWatch(), None, ""
        try:
            async for delta in model.stream([("user", "How do pumps start?")]):
                streamed += delta.text
                if found := watch.feed(delta.text):
                    break
        finally:
            await model.aclose()
    finally:
        server.stop()
    assert found is not None and streamed[:found.keep] == LOOP_INTRO + LOOP_PARAGRAPH


def test_a_loop_at_the_cut_is_two_copies_of_a_long_passage_the_last_perhaps_cut_short() -> None:
    from ragtui.llm.repetition import repeat_at_cut
    from tests.model_habits import LONG_PASSAGE, LOOP_INTRO

    for tail in ("", " " + LONG_PASSAGE[:len(LONG_PASSAGE) // 2], " " + LONG_PASSAGE[:61]):   # 61: inside a word
        loop = repeat_at_cut(f"{LOOP_INTRO}{LONG_PASSAGE} {LONG_PASSAGE}{tail}")
        assert loop is not None and loop.keep == len(LOOP_INTRO + LONG_PASSAGE) and loop.copies == 2
    assert repeat_at_cut(f"{LOOP_INTRO}{LONG_PASSAGE} {LONG_PASSAGE[:200]}") is None   # one copy and a half
    short = "Prime the pump first [1]. Then open the valve [2]."                  # a short one twice is not a loop
    assert repeat_at_cut(f"{LOOP_INTRO}{short} {short}") is None
    assert repeat_at_cut(f"{LONG_PASSAGE} {LONG_PASSAGE[:40]} and then something else entirely [3].") is None
