from __future__ import annotations

import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from ragtui.config_sections import RetrieveSettings
from ragtui.retrieve.postprocess import (
    FUSED_SCORE_KEY,
    cap_per_file,
    dedupe_leading,
    keep_top_percent,
    postprocessors,
)


def test_cap_per_file_keeps_the_best_two() -> None:
    items = [("a", 1), ("a", 2), ("b", 3), ("a", 4), ("b", 5), ("b", 6)]
    assert cap_per_file(items, lambda i: i[0], 2) == [("a", 1), ("a", 2), ("b", 3), ("b", 5)]
    assert cap_per_file(items, lambda i: i[0], 1) == [("a", 1), ("b", 3)]


def test_dedupe_on_leading_200_chars_keeps_first() -> None:
    same = "x" * 200
    items = [same + "tail one", "other", same + "tail two", "x" * 199 + "y"]
    assert dedupe_leading(items, str) == [same + "tail one", "other", "x" * 199 + "y"]


def test_keep_top_percent() -> None:
    assert keep_top_percent(10, 100) == 10
    assert keep_top_percent(10, 25) == 3       # ceil(2.5)
    assert keep_top_percent(3, 1) == 1
    assert keep_top_percent(0, 50) == 0


def node(nid: str, text: str, source: str, score: float) -> NodeWithScore:
    return NodeWithScore(node=TextNode(id_=nid, text=text, metadata={"collection": "c", "source": source}),
                         score=score)


def test_chain_caps_dedupes_normalises_and_cuts() -> None:
    settings = RetrieveSettings(top_k=64, max_chunks_per_file=1, per_file_cap="passages",
                                min_score=0.3, pre_annotate_keep=50,
                                annotate_max=100, min_similarity=0.0, fusion="boost", keyword_weight=0.15, rrf_k=60,
                                neighbor_window=0, min_token_overlap=0.0, min_vector_score=0.0)
    nodes = [node("1", "alpha one", "a.txt", 0.9), node("2", "alpha two", "a.txt", 0.8),
             node("3", "beta", "b.txt", 0.7), node("4", "beta", "c.txt", 0.6),
             node("5", "gamma", "d.txt", 0.5), node("6", "delta", "e.txt", 0.1)]
    out = nodes
    for p in postprocessors(settings):
        out = p.postprocess_nodes(out)
    # cap drops 2; dedupe drops 4 (same text as 3); rel of 1,3,5,6 = 1, .75, .5, 0; min 0.3 drops 6;
    # keep 50% of 3 = ceil(1.5) = 2.
    assert [n.node.node_id for n in out] == ["1", "3"]
    assert [n.score for n in out] == pytest.approx([1.0, 0.75])
    assert out[1].node.metadata[FUSED_SCORE_KEY] == pytest.approx(0.7)


def test_chain_without_cap_keeps_every_chunk_of_a_file() -> None:
    settings = RetrieveSettings(top_k=64, max_chunks_per_file=1, per_file_cap="passages",
                                min_score=0.0, pre_annotate_keep=100,
                                annotate_max=100, min_similarity=0.0, fusion="boost", keyword_weight=0.15, rrf_k=60,
                                neighbor_window=0, min_token_overlap=0.0, min_vector_score=0.0)
    nodes = [node("1", "a1", "a.txt", 0.9), node("2", "a2", "a.txt", 0.8)]
    out = nodes
    for p in postprocessors(settings, per_file_cap=False):
        out = p.postprocess_nodes(out)
    assert [n.node.node_id for n in out] == ["1", "2"]


def test_annotate_max_caps_after_the_percentage() -> None:
    settings = RetrieveSettings(top_k=64, max_chunks_per_file=10, per_file_cap="passages",
                                min_score=0.0, pre_annotate_keep=50,
                                annotate_max=2, min_similarity=0.0, fusion="rrf", keyword_weight=0.15, rrf_k=20,
                                neighbor_window=0, min_token_overlap=0.0, min_vector_score=0.0)
    nodes = [node(str(i), f"text {i}", f"{i}.txt", 1.0 - i / 10) for i in range(8)]
    out = nodes
    for p in postprocessors(settings):
        out = p.postprocess_nodes(out)
    assert [n.node.node_id for n in out] == ["0", "1"]      # 50% keeps 4, the cap 2
