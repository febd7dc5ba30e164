"""WordNet sense choice: a word's synonyms come from the sense closest to the whole query (retrieve/senses.py).

Real path: the mini lexicon installed with `wn`, a collection in Whoosh and Chroma,
and the fake Ollama's hashed bag-of-words embeddings over HTTP, under which a gloss
sharing the query's words is the nearest sense. "bank" lists the river sense
first, so first-synset expansion (RAGWeed) is wrong for a question about loans.
"""

from __future__ import annotations

from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.workspace import Workspace
from tests.collection_builder import build_collection
from tests.fake_ollama import FakeOllama

LOANS = "does the bank lend money against deposits"
FISHING = "fishing from the grassy bank of the river"
DOCS = {
    "loans.txt": ["The depository approved the mortgage after checking the account."],
    "angling.txt": ["Anglers sat on the riverside all afternoon waiting for trout."],
    "garden.txt": ["Tomatoes were staked against the wind in spring."],
}
RIVER, MONEY = ("riverbank", "riverside"), ("depository", "lender")


@pytest.fixture
def by_query(wordnet_settings: Settings) -> Settings:
    """The mini lexicon installed, expansion on, senses chosen by the query (synonyms.sense = "query")."""
    return wordnet_settings.replace(synonyms__sense="query")


def sense_texts(fake: FakeOllama) -> list[str]:
    """Every text embedded so far that is a WordNet sense (lemmas and gloss)."""
    return [t for call in fake.calls("/api/embed") for t in _inputs(call.body) if ":" in t]


def _inputs(body: dict[str, Any]) -> list[str]:
    value = body.get("input", [])
    return [value] if isinstance(value, str) else list(value)


async def test_the_sense_nearest_the_query_gives_the_synonyms(by_query: Settings, fake_ollama: FakeOllama) -> None:
    build_collection(by_query, "notes", DOCS)
    async with Workspace(by_query) as workspace:
        loans = await workspace.retrieve(LOANS, ["notes"])
        fishing = await workspace.retrieve(FISHING, ["notes"])
    kw = loans.meta.collections["notes"].keyword
    assert kw.tier == 2 and kw.synonyms["bank"] == MONEY
    assert "loans.txt" in [h.chunk.meta.source for h in loans.hits if "keyword" in h.legs]
    assert fishing.meta.collections["notes"].keyword.synonyms["bank"] == RIVER
    # both senses embedded once, in one batch, and reused by the second query (the Lexicon's cache)
    assert sorted(sense_texts(fake_ollama)) == [
        "bank, depository, lender: a financial institution that accepts deposits and lends money",
        "bank, riverbank, riverside: sloping land beside a river or stream"]
    assert not loans.notices and not fishing.notices


async def test_without_a_query_vector_the_first_sense_is_used(by_query: Settings, wordnet_settings: Settings,
                                                              fake_ollama: FakeOllama) -> None:
    build_collection(by_query, "notes", DOCS)
    async with Workspace(by_query) as workspace:
        keyword_mode = await workspace.retrieve(LOANS, ["notes"], mode="keyword")
    assert keyword_mode.meta.collections["notes"].keyword.synonyms["bank"] == RIVER
    down = by_query.replace(ollama__host="http://127.0.0.1:9")
    async with Workspace(down) as workspace:
        embedder_down = await workspace.retrieve(LOANS, ["notes"])
    assert embedder_down.keyword_only
    assert embedder_down.meta.collections["notes"].keyword.synonyms["bank"] == RIVER
    async with Workspace(wordnet_settings) as workspace:         # the shipped default: synonyms.sense = "first"
        first = await workspace.retrieve(LOANS, ["notes"])
    assert not first.keyword_only and first.meta.collections["notes"].keyword.synonyms["bank"] == RIVER
    assert sense_texts(fake_ollama) == []


async def test_a_failed_sense_embedding_falls_back_to_the_first_sense_and_says_so(
        by_query: Settings, fake_ollama: FakeOllama) -> None:
    build_collection(by_query, "notes", DOCS)
    fake_ollama.embed_body = lambda texts, dim: b"not json" if any(":" in t for t in texts) else None
    async with Workspace(by_query) as workspace:
        loans = await workspace.retrieve(LOANS, ["notes"])
        assert loans.meta.collections["notes"].keyword.synonyms["bank"] == RIVER
        assert any("WordNet senses could not be compared" in n and "first sense" in n for n in loans.notices)
        assert loans.hits   # the query still answers
        fake_ollama.embed_body = None
        again = await workspace.retrieve(LOANS, ["notes"])
    assert again.meta.collections["notes"].keyword.synonyms["bank"] == MONEY   # nothing bad was cached


def test_senses_in_wordnet_order_and_first_sense_synonyms(wordnet_settings: Settings) -> None:
    from ragtui.retrieve.wordnet import synonym_lookup
    from tests.mini_wordnet import LEXICON

    lookup = synonym_lookup(LEXICON, wordnet_settings.data_dir)
    assert lookup is not None
    senses = lookup.senses("bank")
    assert [s.synonyms for s in senses] == [RIVER, MONEY]
    assert lookup.for_words(["bank", "toilet"])["bank"] == list(RIVER)
