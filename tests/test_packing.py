from __future__ import annotations

from ragtui.llm.packing import chunk_cost, context_budget, lost_in_the_middle, pack
from ragtui.model import Chunk, ChunkMeta
from ragtui.retrieve.result import Hit


def hit(text: str, rel: float) -> Hit:
    meta = ChunkMeta(collection="c", source="a.txt", file_hash="h", format="txt", chunk_index=0,
                     char_start=0, char_end=len(text))
    return Hit(chunk=Chunk(id=text[:8], text=text, meta=meta), score=rel, rel_score=rel, legs=("vector",))


def test_budget_and_cost_formulas() -> None:
    assert context_budget(8192, 4096) == 2096
    assert chunk_cost("") == 40
    assert chunk_cost("x" * 7) == 42          # 7 / 3.5 = 2 exactly
    assert chunk_cost("x" * 8) == 43          # ceil(2.29) = 3


def test_pack_stops_when_the_budget_is_spent() -> None:
    # budget 2096 tokens; 3500 chars cost 1000 + 40 = 1040 each: two fit (2080), a third does not.
    items = ["a" * 3500, "b" * 3500, "c" * 3500]
    assert pack(items, context_window=8192, max_tokens=4096, context_chunks=64) == items[:2]


def test_pack_is_greedy_in_order_and_does_not_skip_ahead() -> None:
    items = ["a" * 3500, "b" * 7000, "c" * 7]
    assert pack(items, context_window=8192, max_tokens=4096, context_chunks=64) == ["a" * 3500]


def test_pack_caps_the_number_of_chunks() -> None:
    items = ["x"] * 10
    assert len(pack(items, context_window=100_000, max_tokens=4096, context_chunks=3)) == 3


def test_pack_nothing_when_no_room() -> None:
    assert pack(["x"], context_window=4000, max_tokens=4096, context_chunks=64) == []


def test_pack_reads_hit_text_by_default() -> None:
    hits = [hit("a" * 3500, 1.0), hit("b" * 3500, 0.5), hit("c" * 3500, 0.1)]
    assert pack(hits, context_window=8192, max_tokens=4096, context_chunks=64) == hits[:2]


def test_lost_in_the_middle_exact_order_for_six() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    hits = [hit(f"n{i}", s) for i, s in enumerate(scores)]
    out = lost_in_the_middle(hits)
    assert [h.chunk.text for h in out] == ["n0", "n2", "n4", "n5", "n3", "n1"]


def test_lost_in_the_middle_odd_count_and_custom_score() -> None:
    items = ["e", "a", "c", "b", "d"]
    rank = {"a": 5, "b": 4, "c": 3, "d": 2, "e": 1}
    assert lost_in_the_middle(items, score=rank.__getitem__) == ["a", "c", "e", "d", "b"]
    assert lost_in_the_middle(["only"], score=lambda s: 1.0) == ["only"]
