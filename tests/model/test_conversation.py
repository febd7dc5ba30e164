"""How a source's annotation state changes: the transitions in ragtui.model.conversation, the one place that says it,
and the frozen conversation's queries."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from ragtui.model.conversation import (
    AnnotationState,
    Conversation,
    Override,
    SessionSource,
    Standing,
    StopReason,
    Turn,
    annotated,
    annotating,
    annotation_failed,
    cut,
    dropped,
    queued,
    rescued,
)
from tests.research_helpers import make_chunk


def source(number: int = 1, **changes: object) -> SessionSource:
    return SessionSource(number, make_chunk(number, f"Text {number}."), 0.5, 0.5, ("vector",), **changes)  # type: ignore[arg-type]


def test_a_verdict_records_its_model_and_prompt_and_settles_an_override_it_agrees_with() -> None:
    was_rescued = source(state=AnnotationState.IRRELEVANT, annotation="old", override=Override.RESCUED)
    judged = annotated(was_rescued, '"Text 1." Relevant.', relevant=True, by="chat", prompt="/p/strict.txt")
    assert (judged.state, judged.annotation, judged.annotated_by, judged.annotation_prompt, judged.override) == \
        (AnnotationState.RELEVANT, '"Text 1." Relevant.', "chat", "/p/strict.txt", Override.NONE)
    still_rescued = annotated(was_rescued, "[IRRELEVANT!!!]", relevant=False, by="chat", prompt="")
    assert still_rescued.override is Override.RESCUED and still_rescued.relevant
    was_dropped = source(state=AnnotationState.RELEVANT, override=Override.DROPPED)
    assert annotated(was_dropped, "x", relevant=False, by="chat", prompt="").override is Override.NONE
    assert annotated(was_dropped, "x", relevant=True, by="chat", prompt="").override is Override.DROPPED


def test_a_failure_keeps_the_earlier_annotation_and_a_new_pass_clears_the_error() -> None:
    failed = annotation_failed(source(state=AnnotationState.RELEVANT, annotation="kept"), "HTTP 500")
    assert (failed.state, failed.error, failed.annotation, failed.filtered) == \
        (AnnotationState.FAILED, "HTTP 500", "kept", True)
    again = queued(failed)
    assert (again.state, again.error, again.annotation) == (AnnotationState.PENDING, "", "kept")
    assert annotating(again).state is AnnotationState.RUNNING


def test_a_cancel_puts_back_only_what_the_pass_did_not_finish() -> None:
    before = source(state=AnnotationState.RELEVANT, annotation="before")
    assert cut(annotating(queued(before)), before) == before
    assert cut(queued(before), before) == before
    finished = annotated(queued(before), "after", relevant=False, by="chat", prompt="")
    assert cut(finished, before) == finished


def test_rescue_and_drop_need_no_override_where_the_verdict_already_agrees() -> None:
    irrelevant = source(state=AnnotationState.IRRELEVANT)
    assert rescued(irrelevant).override is Override.RESCUED and rescued(irrelevant).relevant
    assert dropped(rescued(irrelevant)).override is Override.NONE and not dropped(rescued(irrelevant)).relevant
    relevant = source(state=AnnotationState.RELEVANT)
    assert dropped(relevant).override is Override.DROPPED and dropped(relevant).filtered
    assert rescued(dropped(relevant)).override is Override.NONE and rescued(dropped(relevant)).relevant


def test_standing_puts_the_users_override_first() -> None:
    assert source(state=AnnotationState.IRRELEVANT, override=Override.RESCUED).standing is Standing.RESCUED
    assert source(state=AnnotationState.RELEVANT, override=Override.DROPPED).standing is Standing.DROPPED
    assert source(state=AnnotationState.PENDING).standing is Standing.NOT_ANNOTATED
    assert {source(state=s).standing.value for s in AnnotationState} == \
        {"not annotated", "running", "relevant", "irrelevant", "failed", "off"}


def test_the_conversation_is_frozen_and_its_queries_reach_every_turn() -> None:
    first = Turn("q1", sources=[source(1), source(2, state=AnnotationState.IRRELEVANT)], answer="a [1]",
                 stop_reason=StopReason.STOP, prompt=[("user", "u")])
    second = Turn("q2", rewrite="q2 standalone", sources=[source(3)], answer="partial",
                  stop_reason=StopReason.LENGTH, prompt=[("user", "u")], timings={"retrieve_s": 0.1})
    convo = Conversation(["docs"], {"llm.model": "chat"}, "chat", "chat", turns=[first, second])
    assert convo.turns == (first, second) and convo.collections == ("docs",) and convo.query == "q1"
    assert convo.next_number() == 4 and convo.turn_of(2) == 1 and convo.turn_of(3) == 2
    assert convo.source(2).state is AnnotationState.IRRELEVANT
    assert [s.number for s in convo.turns[0].relevant] == [1]
    assert convo.turn.truncated and convo.turn.can_continue
    assert convo.annotation_query(2) == 'q2 (a follow-up to "q1"; read as: "q2 standalone")'
    assert convo.annotation_query(1) == "q1"
    with pytest.raises(KeyError, match=r"no source \[9\].*\[1\]-\[3\]"):
        convo.source(9)
    with pytest.raises(FrozenInstanceError):
        convo.turn.answer = "changed"     # type: ignore[misc]
    with pytest.raises(TypeError):
        convo.turn.timings["retrieve_s"] = 2.0   # type: ignore[index]
    changed = convo.with_source(rescued(convo.source(2)))
    assert changed.source(2).override is Override.RESCUED and convo.source(2).override is Override.NONE
    assert changed.turns[1] is convo.turns[1]
