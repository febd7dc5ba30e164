from __future__ import annotations

from pathlib import Path

import pytest

from ragtui.config_sections import KeywordSettings
from ragtui.retrieve.keyword_leg import keyword_search, plan_for
from ragtui.stores.keyword import KeywordIndex
from tests.collection_builder import index_chunks, make_chunks

KEYWORD = KeywordSettings(enabled=True, min_query_ic=0.5, long_query_threshold=5, bm25_k1=1.2, bm25_b=0.75)


@pytest.fixture
def index(tmp_path: Path) -> KeywordIndex:
    ix = KeywordIndex(tmp_path / "whoosh")
    index_chunks(ix, make_chunks("c", {"a.txt": ["Flushing the toilet tank.", "The tank was flushed twice."],
                                "b.txt": ["Control valves and the toilet."]}))
    return ix


def test_df_is_read_for_the_stemmed_term_and_stop_words_count_as_everywhere(index: KeywordIndex) -> None:
    with index.scoring() as view:
        plan, term_of = plan_for(index, view, ["flushing", "the", "zebra"], KEYWORD, 5)
    assert term_of == {"flushing": "flush", "zebra": "zebra"}             # "the" is a stop word: no term
    assert plan.idf["flushing"] == pytest.approx(0.287682, abs=1e-6)      # ln(4 / 3): "flush" in 2 of N = 3
    assert plan.idf["the"] == pytest.approx(0.0)                          # df = N
    assert plan.idf["zebra"] == pytest.approx(1.386294, abs=1e-6)         # ln(4 / 1): absent
    assert plan.budgets["zebra"] == 5


def test_idf_cache_is_dropped_when_the_index_changes(index: KeywordIndex) -> None:
    with index.scoring() as view:
        assert view.frequencies(["tank"]) == (3, {"tank": 2})
    index_chunks(index, make_chunks("c", {"c.txt": ["A tank of water."]}))
    with index.scoring() as view:
        assert view.frequencies(["tank"]) == (4, {"tank": 3})


def test_full_matches_stay_ahead_in_the_or_tier(index: KeywordIndex) -> None:
    # mean IDF = (ln(4/3) + ln(4/2)) / 2 = 0.49: under the default gate, so lower it here
    result = keyword_search(index, "toilet valves", keyword=KeywordSettings(True, 0.1, 5, 1.2, 0.75), top_k=10,
                            synonyms=None, max_synonyms=0)
    assert result.meta.tier == 2 and result.meta.and_hits == 1
    texts = [c.text for c, _ in result.hits]
    assert texts[0] == "Control valves and the toilet." and len(texts) == 2
    scores = [s for _, s in result.hits]
    assert scores == sorted(scores, reverse=True)
