"""The retrieval strategies ([strategies]) and the quality floors, end to end: real Whoosh and Chroma in tmp
dirs, embeddings and the model's replies from the fake servers over HTTP."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from ragtui.config import ConfigError, Settings
from ragtui.model.chunks import leg_score
from ragtui.model.retrieval import Retrieval
from ragtui.retrieve.explain import leg_label, meta_lines
from ragtui.retrieve.fragments import query_fragments
from ragtui.workspace import Workspace
from tests.collection_builder import build_collection
from tests.fake_ollama import FakeOllama, Reply
from tests.fake_openai import FakeOpenAI

HOUSE = {
    "cistern.txt": ["The lavatory cistern refills after each flush."],
    "hall.txt": ["Toilet paper, soap, towels and spare bulbs are stored in the hall cupboard."],
    "garden.txt": ["Mulch the beds in spring and stake the tomatoes against the wind."],
}
PASSAGE = "The lavatory cistern refills after each flush of the toilet."


async def retrieve(settings: Settings, query: str, **kw: Any) -> Retrieval:
    async with Workspace(settings) as workspace:
        return await workspace.retrieve(query, ["house"], **kw)


def sources(found: Retrieval) -> list[str]:
    return [h.chunk.meta.source for h in found.hits]


@pytest.fixture
def house(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    build_collection(make_settings(), "house", HOUSE)
    return lambda *overrides: make_settings("retrieve.top_k=3", "retrieve.min_similarity=0", *overrides)


def chats(fake: FakeOllama) -> list[str]:
    """The system prompts of the chat calls the fake answered."""
    return [str(c.body["messages"][0]["content"]) for c in fake.calls("/api/chat")]


# --- multi-query ------------------------------------------------------------------------------------------

async def test_multi_query_searches_each_query_the_model_writes_and_fuses_them(
        house: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    plain = await retrieve(house(), "toilet", mode="keyword")
    assert sources(plain) == ["hall.txt"]

    fake_ollama.script(Reply.text("1. Toilet cistern\n2. toilet\n- lavatory cistern toilet refill."))
    found = await retrieve(house("strategies.multi_query=3"), "toilet", mode="keyword")
    assert set(sources(found)) == {"hall.txt", "cistern.txt"}           # only the queries found the cistern
    meta = found.meta.strategies
    assert meta is not None and meta.strategies == ("multi-query",)
    assert meta.queries == ("Toilet cistern", "lavatory cistern toilet refill")   # the echo of the question dropped
    assert meta.llm_calls == 1 and meta.searches == 3 and meta.fallbacks == ()
    cistern = found.hits[sources(found).index("cistern.txt")]
    assert {e.leg for e in cistern.evidence} >= {"variant 1", "variant 1:keyword"}
    assert "differently worded" not in chats(fake_ollama)[0] and "3 search queries" in chats(fake_ollama)[0]
    assert found.meta.to_json()["strategies"]["queries"] == list(meta.queries)
    shown = meta_lines(found.meta)
    assert shown[-3].startswith("Strategies: multi-query; 3 search(es), 1 model call(s) in ")
    assert shown[-2:] == ["  also searched: Toilet cistern", "  also searched: lavatory cistern toilet refill"]
    assert leg_label("variant 1:keyword") == "variant 1 · keyword leg"


async def test_a_refusing_model_falls_back_to_the_question_as_typed_with_a_notice(
        house: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.text("I'm sorry, but I cannot answer that.\nAs an AI I do not know."))
    found = await retrieve(house("strategies.multi_query=2"), "toilet", mode="keyword")
    assert sources(found) == ["hall.txt"]
    meta = found.meta.strategies
    assert meta is not None and meta.queries == () and meta.llm_calls == 1 and meta.searches == 1
    assert meta.fallbacks == ("multi-query: no usable query: it reads as a refusal, not a question",)
    assert ("multi-query was not used (no usable query: it reads as a refusal, not a question); searched without "
            "alternative queries.") in found.notices


async def test_junk_off_the_subject_is_not_searched(house: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.text("```python\nprint('hello')\n```\n\x1b[31mstake the tomatoes\x1b[0m"))
    found = await retrieve(house("strategies.multi_query=2"), "toilet", mode="keyword")
    assert sources(found) == ["hall.txt"]
    assert found.meta.strategies is not None and found.meta.strategies.queries == ()
    assert any("no usable query: it shares no word with the question" in n for n in found.notices)


async def test_a_model_that_does_not_answer_in_time_is_cut_off(house: Callable[..., Settings],
                                                               fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.text("toilet cistern and more words", delay=4))    # 20 s for the whole reply
    started = time.perf_counter()
    found = await retrieve(house("strategies.multi_query=2", "strategies.timeout_s=1"), "toilet", mode="keyword")
    assert time.perf_counter() - started < 15                   # a wide margin for a loaded machine
    assert sources(found) == ["hall.txt"]
    meta = found.meta.strategies
    assert meta is not None and meta.llm_calls == 1 and 0.9 < meta.llm_s < 4
    assert any("within strategies.timeout_s = 1 s" in n for n in found.notices)


async def test_without_a_chat_model_the_strategy_says_so(house: Callable[..., Settings]) -> None:
    found = await retrieve(house("strategies.multi_query=2", "strategies.hyde=on", "llm.model="), "toilet")
    assert "hall.txt" in sources(found)
    assert any("multi-query was not used" in n and "llm.model is not set" in n for n in found.notices)
    assert any("HyDE was not used" in n and "llm.model is not set" in n for n in found.notices)
    meta = found.meta.strategies
    assert meta is not None and meta.llm_calls == 0


def test_multi_query_takes_two_to_four_queries(make_settings: Callable[..., Settings]) -> None:
    with pytest.raises(ConfigError, match=r"strategies\.multi_query"):
        make_settings("strategies.multi_query=1")


async def test_multi_query_from_an_openai_compatible_server(house: Callable[..., Settings]) -> None:
    server = FakeOpenAI(models=("served-model",)).start()
    try:
        server.responder = lambda body: "Here are the queries:\n1) toilet cistern\n2) toilet roll storage"
        found = await retrieve(house("llm.provider=openai", f"llm.base_url={server.url}", "llm.model=served-model",
                                     "strategies.multi_query=2"), "toilet", mode="keyword")
    finally:
        server.stop()
    meta = found.meta.strategies
    assert meta is not None and meta.queries == ("toilet cistern", "toilet roll storage")
    assert "cistern.txt" in sources(found)
    assert server.requests[0]["max_tokens"] == 160          # strategies.max_tokens, not llm.max_tokens


# --- HyDE -------------------------------------------------------------------------------------------------

def vector_of(found: Retrieval, source: str) -> float | None:
    hit = next(h for h in found.hits if h.chunk.meta.source == source)
    return leg_score(hit.evidence, "vector")


async def test_hyde_searches_the_vector_leg_with_the_passage_and_the_question(
        house: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    plain = await retrieve(house(), "toilet", mode="vector")
    assert sources(plain)[0] == "hall.txt"

    fake_ollama.script(Reply.text(PASSAGE))
    found = await retrieve(house("strategies.hyde=on"), "toilet", mode="vector")
    assert sources(found)[0] == "cistern.txt"                  # the passage's words pulled it up
    assert (vector_of(found, "cistern.txt") or 0) > (vector_of(plain, "cistern.txt") or 0) + 0.2
    meta = found.meta.strategies
    assert meta is not None and meta.hyde_passages == (PASSAGE,) and meta.llm_calls == 1 and meta.searches == 1
    inputs = [c.body["input"] for c in fake_ollama.calls("/api/embed")]
    embedded = [t for i in inputs for t in ([i] if isinstance(i, str) else i)]
    assert PASSAGE.lower() in embedded and "toilet" in embedded


async def test_hyde_leaves_the_keyword_leg_to_the_typed_words(house: Callable[..., Settings],
                                                              fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.text(PASSAGE))
    found = await retrieve(house("strategies.hyde=on"), "toilet", mode="keyword")
    assert sources(found) == ["hall.txt"] and found.meta.strategies is not None
    assert found.meta.strategies.llm_calls == 0 and chats(fake_ollama) == []


async def test_adaptive_hyde_asks_only_when_the_best_cosine_is_low(house: Callable[..., Settings],
                                                                   fake_ollama: FakeOllama) -> None:
    confident = await retrieve(house("strategies.hyde=adaptive", "strategies.hyde_below=0.05"), "toilet",
                               mode="vector")
    meta = confident.meta.strategies
    assert meta is not None and meta.llm_calls == 0 and meta.searches == 1 and meta.best_vector is not None
    assert meta.best_vector >= 0.05 and chats(fake_ollama) == []

    fake_ollama.script(Reply.text(PASSAGE))
    unsure = await retrieve(house("strategies.hyde=adaptive", "strategies.hyde_below=0.99"), "toilet",
                            mode="vector")
    meta = unsure.meta.strategies
    assert meta is not None and meta.llm_calls == 1 and meta.searches == 2 and meta.hyde_passages == (PASSAGE,)
    assert sources(unsure)[0] == "cistern.txt"


async def test_multi_hyde_asks_each_prompt_and_drops_a_junk_passage(house: Callable[..., Settings],
                                                                    fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.text(PASSAGE), Reply.text("I'm sorry, I cannot write that."),
                       Reply.text("A toilet cistern holds the flush water."))
    found = await retrieve(house("strategies.hyde=on", "strategies.hyde_prompts=3"), "toilet", mode="vector")
    meta = found.meta.strategies
    assert meta is not None and meta.llm_calls == 3
    assert meta.hyde_passages == (PASSAGE, "A toilet cistern holds the flush water.")
    prompts = chats(fake_ollama)
    assert len(set(prompts)) == 3 and "encyclopedia" in prompts[2]
    assert found.notices == []                                 # two passages were usable: nothing fell back


async def test_hyde_with_only_junk_searches_the_question_and_says_so(house: Callable[..., Settings],
                                                                     fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.text("The sources do not answer this question."))
    found = await retrieve(house("strategies.hyde=on"), "toilet", mode="vector")
    assert sources(found)[0] == "hall.txt"
    assert ("HyDE was not used (no usable passage: it reads as a refusal); the vector leg searched the question "
            "as typed.") in found.notices


# --- fragments --------------------------------------------------------------------------------------------

def test_a_question_is_split_on_full_stops_question_marks_and_semicolons() -> None:
    assert query_fragments("Where is the toilet paper? How does the cistern refill; and the mulch.") == [
        "Where is the toilet paper?", "How does the cistern refill", "and the mulch"]
    assert query_fragments("What is 2.5 bar in psi?") == []                 # one fragment: not split
    assert query_fragments("Why? Pumps.") == []                             # "Why?" has no content word
    assert query_fragments("pumps. " * 20) == []                            # the same part repeated is one
    for whole in ("For what invention was U.S. Patent 1,655,114 granted?", "When was St. John's built?",
                  'Who said, "Here I stand. I can do no other"?', "In what year was Rev. Jimmy Creech tried?",
                  "what is the (the ?slip? effect) here"):
        assert query_fragments(whole) == [], whole
    assert query_fragments("pumps; seals; valves; motors; gears; belts; fans; pipes")[-1] == "belts"  # at most six


async def test_fragments_are_each_searched_and_fused(house: Callable[..., Settings],
                                                     fake_ollama: FakeOllama) -> None:
    found = await retrieve(house("strategies.fragments=true", "keyword.min_query_ic=0"),
                           "where is the toilet paper; when to mulch", mode="keyword")
    meta = found.meta.strategies
    assert meta is not None and meta.queries == ("where is the toilet paper", "when to mulch")
    assert meta.llm_calls == 0 and meta.searches == 3 and chats(fake_ollama) == []
    assert {"hall.txt", "garden.txt"} <= set(sources(found))


# --- the quality floors -----------------------------------------------------------------------------------

async def test_the_token_overlap_floor_drops_chunks_without_the_question_words(
        house: Callable[..., Settings]) -> None:
    loose = await retrieve(house(), "toilet cupboard", mode="vector")
    assert len(loose.hits) == 3
    strict = await retrieve(house("retrieve.min_token_overlap=0.5"), "toilet cupboard", mode="vector")
    assert sources(strict) == ["hall.txt"] and strict.meta.below_floors == 2
    assert strict.meta.to_json()["below_floors"] == 2


async def test_the_absolute_score_floor_holds_for_keyword_hits_too(house: Callable[..., Settings]) -> None:
    found = await retrieve(house("retrieve.min_vector_score=0.99"), "toilet")
    assert found.hits == [] and found.meta.below_floors >= 1
    assert any("below the quality floors" in n and "retrieve.min_vector_score = 0.99" in n for n in found.notices)



async def test_a_question_the_floors_empty_says_so_and_not_that_no_keyword_matched(
        house: Callable[..., Settings]) -> None:
    found = await retrieve(house("retrieve.min_token_overlap=1", "retrieve.min_similarity=0.99"), "toilet cistern")
    assert found.hits == [] and found.meta.below_floors == 2 and found.meta.below_min_similarity == 1
    assert found.notices == ["Nothing relevant in house: the 2 passages found are all below the quality floors "
                             "(retrieve.min_token_overlap = 1, retrieve.min_vector_score = 0), and 1 more below "
                             "retrieve.min_similarity = 0.99."]


async def test_after_one_timeout_the_other_strategies_do_not_wait_for_the_model_again(
        house: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    slow = Reply.text("toilet cistern and more words", delay=4)
    fake_ollama.script(slow, slow, slow)
    started = time.perf_counter()
    found = await retrieve(house("strategies.hyde=on", "strategies.hyde_prompts=2", "strategies.multi_query=2",
                                 "strategies.timeout_s=1"), "toilet")
    assert time.perf_counter() - started < 15
    meta = found.meta.strategies
    assert meta is not None and meta.llm_calls == 1 and meta.llm_s < 4     # one wait, not one per call
    assert "hall.txt" in sources(found)
    said = [n for n in found.notices if "within strategies.timeout_s = 1 s" in n]
    assert [n.split(" was not used")[0] for n in said] == ["HyDE", "multi-query"]    # each strategy says it once


async def test_with_nothing_left_to_search_no_strategy_asks_the_model(house: Callable[..., Settings],
                                                                      fake_ollama: FakeOllama) -> None:
    settings = house("strategies.hyde=on", "strategies.multi_query=2")
    folder = settings.data_dir / "collections" / "house"
    folder.rename(folder.with_name("elsewhere"))
    folder.symlink_to(folder.with_name("elsewhere"))            # a link in place of the folder: damaged
    fake_ollama.script(Reply.text(PASSAGE), Reply.text("toilet cistern\ntoilet roll"))
    found = await retrieve(settings, "toilet")
    assert found.hits == [] and chats(fake_ollama) == []
    assert len(found.notices) == 1 and "it was not searched" in found.notices[0]


async def test_a_fragment_that_found_nothing_does_not_say_so_beside_the_sources_others_found(
        house: Callable[..., Settings]) -> None:
    alone = await retrieve(house("keyword.min_query_ic=0"), "zebra okapi", mode="keyword")
    assert alone.hits == [] and len(alone.notices) == 1 and "house" in alone.notices[0]
    found = await retrieve(house("strategies.fragments=true", "keyword.min_query_ic=0"),
                           "where is the toilet paper; zebra okapi", mode="keyword")
    assert sources(found) == ["hall.txt"] and found.meta.strategies is not None
    assert found.meta.strategies.queries == ("where is the toilet paper", "zebra okapi")
    assert found.notices == []                  # not the fragment's "nothing found" beside hall.txt
