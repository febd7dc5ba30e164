"""Synthesis building blocks: serialisation (RAGWeed 5), packing order, citations, the Continue seam."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from ragtui.llm.citations import CitationSpan, check_citations, citation_spans, cited_numbers
from ragtui.llm.continuation import SeamBuffer, overlap, restart_end, seam
from ragtui.llm.synthesize import build_messages, continue_messages, plan, serialise
from ragtui.model.conversation import AnnotationState, SessionSource
from tests.research_helpers import make_chunk


def _source(number: int, text: str = "Body text.", *, page: str = "", rel: float = 1.0,
            state: AnnotationState = AnnotationState.RELEVANT, annotation: str = "") -> SessionSource:
    return SessionSource(number=number, chunk=make_chunk(number, text, page=page), score=rel, rel_score=rel,
                         legs=("vector",), state=state, annotation=annotation)


def test_serialise_with_page_and_annotation() -> None:
    s = _source(3, "  The pump starts at 3 bar.\n", page="12", annotation='"starts at 3 bar"\n  relevant: pressure')
    assert serialise(s) == ('[3] SOURCE: docs/file3.md [p.12]\n'
                            'ANNOTATION: "starts at 3 bar" relevant: pressure\n'
                            '<<<\nThe pump starts at 3 bar.\n>>>')


def test_serialise_without_page_or_annotation_and_hides_a_rescued_sentinel() -> None:
    assert serialise(_source(1, "Text.", state=AnnotationState.OFF)) == "[1] SOURCE: docs/file1.md\n<<<\nText.\n>>>"
    rescued = _source(2, "Text.", state=AnnotationState.IRRELEVANT, annotation="[IRRELEVANT!!!]")
    assert "ANNOTATION" not in serialise(rescued)


def test_structure_like_lines_in_a_source_are_escaped_inside_its_fence() -> None:
    text = "ok\n  [2] SOURCE: x.md\r[3]source: y\u2028annotation: z\n<<<\n\\n\n>>> end\nsee [1] SOURCE: mid-line"
    assert serialise(_source(1, text, state=AnnotationState.OFF)) == (
        "[1] SOURCE: docs/file1.md\n<<<\nok\n\\  [2] SOURCE: x.md\n\\[3]source: y\n\\annotation: z\n\\<<<\n"
        "\\\\n\n\\>>> end\nsee [1] SOURCE: mid-line\n>>>")


def test_a_file_name_with_a_line_break_stays_on_its_header_line() -> None:
    source = _source(1, state=AnnotationState.OFF)
    source = replace(source, chunk=replace(source.chunk, meta=replace(source.chunk.meta, source="a\n[2] SOURCE: b")))
    assert serialise(source).splitlines()[:2] == ["[1] SOURCE: docs/a [2] SOURCE: b", "<<<"]


def test_messages_tell_the_model_to_use_only_the_sources_and_cite() -> None:
    messages = build_messages("How fast?", [_source(2), _source(1)])
    assert [role for role, _ in messages] == ["system", "user"]
    system, user = messages[0][1], messages[1][1]
    assert "only" in system and "[2]" in system
    assert user.index("[2] SOURCE") < user.index("[1] SOURCE") < user.index("QUESTION: How fast?")
    cont = continue_messages(messages, "partial")
    assert cont[:2] == messages and cont[2] == ("assistant", "partial") and cont[3][0] == "user"


def test_plan_keeps_rank_numbers_packs_best_first_and_orders_best_first_second_last() -> None:
    sources = [_source(n, "x" * 350, rel=1.0 - (n - 1) / 10) for n in range(1, 7)]
    # each source costs ceil(350 / 3.5) + 40 = 140 tokens; budget 8192 - 5632 - 2000 = 560 -> 4 sources
    result = plan(list(reversed(sources)), query="q", context_window=8192, max_tokens=5632, context_chunks=64)
    assert sorted(s.number for s in result.ordered) == [1, 2, 3, 4]
    assert [s.number for s in result.left_out] == [5, 6]
    assert result.ordered[0].number == 1 and result.ordered[-1].number == 2
    capped = plan(sources, query="q", context_window=100_000, max_tokens=10, context_chunks=2)
    assert sorted(s.number for s in capped.ordered) == [1, 2] and len(capped.left_out) == 4


def test_plan_sends_the_most_relevant_window_of_sources_too_long_to_fit() -> None:
    long = "Unrelated opening prose. " * 300 + "The relief valve opens at 6 bar. " + "More prose here. " * 100
    sources = [_source(1, long, rel=1.0), _source(2, "b" * 9000, rel=0.5)]
    result = plan(sources, query="At what pressure does the relief valve open?", context_window=8192,
                  max_tokens=4096, context_chunks=64)
    assert sorted(s.number for s in result.ordered) == [1, 2] and result.left_out == []
    start, end = result.windows[1]
    sent = next(s for s in result.ordered if s.number == 1).chunk.text
    assert sent == long[start:end] and "The relief valve opens at 6 bar." in sent and len(sent) <= 1200
    assert sources[0].chunk.text == long                      # the session's source is not changed
    hopeless = plan(sources, query="valve", context_window=6100, max_tokens=4096, context_chunks=64)
    assert hopeless.ordered == [] and hopeless.windows == {} and len(hopeless.left_out) == 2


@pytest.mark.parametrize(("text", "numbers"), [
    ("Pumps start at 3 bar [3].", (3,)),
    ("Both agree [1, 2] and [2; 5].", (1, 2, 5)),
    ("Chained [1][2] cites.", (1, 2)),
    ("A range [2-4] and an en dash [6–7].", (2, 3, 4, 6, 7)),
    ("Spaces [ 8 ] and order [9] [8].", (8, 9)),
    ("Not citations: [p.3], [a], [link](http://x), [], [2-1000].", (2,)),
])
def test_citation_forms(text: str, numbers: tuple[int, ...]) -> None:
    assert cited_numbers(text) == numbers


def test_citation_spans_leave_a_markdown_link_alone() -> None:
    """The TUI links exactly these spans: a range is one citation of three sources, [1](http://x) a link."""
    assert citation_spans("[2-4]; see [1](http://x)") == (CitationSpan(0, 5, (2, 3, 4)),)


def test_citations_outside_the_prompt_are_flagged() -> None:
    found = check_citations("See [1], [4] and [12].", in_prompt={1, 2, 4})
    assert found.cited == (1, 4, 12) and found.unknown == (12,)


@pytest.mark.parametrize(("prev", "add", "joined"), [
    ("The pump starts", " at 3 bar.", "The pump starts at 3 bar."),
    ("The pump starts ", " at 3 bar.", "The pump starts at 3 bar."),
    ("The pump starts ", "at 3 bar.", "The pump starts at 3 bar."),
    ("The pump starts", "at 3 bar.", "The pump starts at 3 bar."),
    ("The pump starts at 3 bar", ". Then it stops.", "The pump starts at 3 bar. Then it stops."),
    ("It said (", "quote) here.", "It said (quote) here."),
    ("First paragraph.", "\n\nSecond paragraph.", "First paragraph.\n\nSecond paragraph."),
    ("First paragraph. ", "\n\nSecond.", "First paragraph. \n\nSecond."),
    # the model repeats the tail, the last sentence, or everything
    ("The flow goes into the reservoir", "into the reservoir and back out.",
     "The flow goes into the reservoir and back out."),
    ("Pumps lift water [1]. The valve opens at", "The valve opens at 2 bar [2].",
     "Pumps lift water [1]. The valve opens at 2 bar [2]."),
    ("According to the sources: A [1]. ", "According to the sources: A [1]. B [2].",
     "According to the sources: A [1]. B [2]."),
    ("We flow to the", "the sea.", "We flow to the sea."),
    # a shared fragment that is not a whole word is not a repeat
    ("Read the", "theory next.", "Read the theory next."),
    ("All done.", "", "All done."),
    ("", "Start.", "Start."),
])
def test_seam(prev: str, add: str, joined: str) -> None:
    assert prev + seam(prev, add) == joined


def test_overlap_is_whole_words_only() -> None:
    assert overlap("ends in the", "the end") == 3
    assert overlap("ends in them", "the end") == 0
    assert overlap("abc.", ". next") == 0


@pytest.mark.parametrize("pieces", [
    ["According ", "to ", "the ", "sources: ", "A ", "[1]. ", "B ", "[2]."],
    ["into ", "the ", "reservoir ", "and ", "back."],
    [" and", " back."],
    ["", "  ", "and back."],
])
def test_seam_buffer_streams_the_same_text_as_seam(pieces: list[str]) -> None:
    for prev in ("According to the sources: A [1]. ", "The flow goes into the reservoir", "x"):
        buffer = SeamBuffer(prev)
        streamed = "".join(buffer.feed(p) for p in pieces) + buffer.finish()
        assert streamed == seam(prev, "".join(pieces))


ANSWER = ("Centrifugal pumps must be primed before they start [1]. A primed pump starts at about 3 bar of "
          "pressure, and the relief valve opens at 12 bar [2]. Running a pump dry wears its seals within "
          "minutes, so the manual asks for a check of the water level before every start")
NEW = " [3]. The level sensor sits on the suction side and trips the motor when the water drops."


@pytest.mark.parametrize(("add", "joined"), [
    # the whole answer again, verbatim, then the rest
    (ANSWER + NEW, ANSWER + NEW),
    # again, with a word or two changed, and a paragraph break before it
    ("\n\n" + ANSWER.replace("must be primed", "need priming").replace("within minutes", "in minutes") + NEW,
     ANSWER + NEW),
    # a shorter restart (the first two sentences, reworded a little), then new text
    ("Centrifugal pumps must be primed before starting [1]. A primed pump starts at roughly 3 bar of pressure, "
     "and the relief valve opens at 12 bar [2]. The level sensor sits on the suction side.",
     ANSWER + " The level sensor sits on the suction side."),
    # the whole answer again and nothing more: nothing to add
    (ANSWER, ANSWER),
    (" " + ANSWER.replace("3 bar", "three bar"), ANSWER),
])
def test_a_restart_of_the_whole_answer_is_dropped_and_the_new_text_kept(add: str, joined: str) -> None:
    assert ANSWER + seam(ANSWER, add) == joined
    buffer = SeamBuffer(ANSWER)
    streamed = "".join(buffer.feed(piece) for piece in re.findall(r"\S+\s*|\s+", add)) + buffer.finish()
    assert ANSWER + streamed == joined


@pytest.mark.parametrize("add", [
    # a stock opening shared with the answer, then new text
    " [3]. Centrifugal pumps must be checked every year by a technician, and the seals replaced.",
    # the answer's words said again later in genuinely new text
    " [3]. In short: a primed pump starts at about 3 bar, and the level sensor protects the seals.",
    # new text throughout
    " [3]. The level sensor sits on the suction side and trips the motor.",
])
def test_genuine_new_text_is_kept_whole(add: str) -> None:
    assert seam(ANSWER, add) == add
    buffer = SeamBuffer(ANSWER)
    assert "".join(buffer.feed(piece) for piece in re.findall(r"\S+\s*|\s+", add)) + buffer.finish() == add


def test_restart_detection_is_on_the_answers_opening_and_the_shared_share() -> None:
    assert restart_end(ANSWER, ANSWER + NEW) == len(ANSWER)
    assert restart_end(ANSWER, "Pumps lift water from wells and rivers.") == 0
    # a new sentence that opens like the answer is no restart; ten words of it again are
    assert restart_end(ANSWER, "Centrifugal pumps must be primed before anything else is done to them.") == 0
    opening = "Centrifugal pumps must be primed before they start [1]. A primed"
    assert restart_end(ANSWER, opening + " motor hums, and its seals stay cool for years.") == len(opening)
    # the same words from the middle of the answer are not a restart of the answer
    assert restart_end(ANSWER, "the relief valve opens at 12 bar, then the motor stops.") == 0
    # every other word changed: not a copy
    assert restart_end(ANSWER, "Centrifugal fans must be oiled before they run [1]. A primed fan runs at") == 0
