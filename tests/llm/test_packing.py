from __future__ import annotations

from ragtui.config import load_settings
from ragtui.ingest.chunking import window_chars, window_spans
from ragtui.llm.packing import chunk_cost, context_budget, lost_in_the_middle, pack
from ragtui.llm.providers import DEFAULT_CONTEXT_WINDOW
from ragtui.model.chunks import Chunk, ChunkMeta
from ragtui.model.conversation import AnnotationState, SessionSource
from ragtui.model.retrieval import Hit


def hit(text: str, rel: float) -> Hit:
    meta = ChunkMeta(collection="c", source="a.txt", file_hash="h", format="txt", chunk_index=0,
                     char_start=0, char_end=len(text))
    return Hit(chunk=Chunk(id=text[:8], text=text, meta=meta), score=rel, rel_score=rel, legs=("vector",))


def test_budget_and_cost_formulas() -> None:
    assert context_budget(8192, 4096) == 2096
    assert chunk_cost("") == 40
    assert chunk_cost("x" * 7) == 42          # 7 / 3.5 = 2 exactly
    assert chunk_cost("x" * 8) == 43          # ceil(2.29) = 3


def whole(items: list) -> list:
    return [(item, None) for item in items]


def test_pack_stops_when_the_budget_is_spent() -> None:
    # budget 2096 tokens; 3500 chars cost 1000 + 40 = 1040 each: two fit (2080), a third does not.
    items = ["a" * 3500, "b" * 3500, "c" * 3500]
    assert pack(items, context_window=8192, max_tokens=4096, context_chunks=64) == whole(items[:2])


def test_pack_is_greedy_in_order_and_does_not_skip_ahead() -> None:
    items = ["a" * 3500, "b" * 7000, "c" * 7]
    assert pack(items, context_window=8192, max_tokens=4096, context_chunks=64) == whole(["a" * 3500])


def test_pack_sends_the_best_window_of_a_source_that_does_not_fit_whole() -> None:
    long = "Filler sentence about nothing. " * 300 + "Valve seats wear under cavitation. " + "More filler. " * 50
    items = ["a" * 3500, long, "c" * 7]
    packed = pack(items, query="why do valve seats wear", context_window=8192, max_tokens=4096, context_chunks=64)
    assert [item for item, _ in packed] == items          # nothing dropped, order kept
    span = packed[1][1]
    assert span is not None and span[1] - span[0] <= 1200
    assert "Valve seats wear under cavitation." in long[span[0]:span[1]]
    assert packed[0][1] is None and packed[2][1] is None


def test_pack_counts_the_annotation_of_a_relevant_source() -> None:
    src = SessionSource(number=1, chunk=hit("x" * 350, 1.0).chunk, score=1.0, rel_score=1.0, legs=("vector",),
                        state=AnnotationState.RELEVANT, annotation="q" * 700)
    assert chunk_cost("x" * 350, "q" * 700) == 100 + 40 + 200
    assert len(pack([src] * 10, context_window=2000 + 10 + 340 * 3, max_tokens=10, context_chunks=64)) == 3


def test_pack_caps_the_number_of_chunks() -> None:
    items = ["x"] * 10
    assert len(pack(items, context_window=100_000, max_tokens=4096, context_chunks=3)) == 3


def test_pack_nothing_when_no_room() -> None:
    assert pack(["x"], context_window=4000, max_tokens=4096, context_chunks=64) == []


def test_pack_reads_hit_text_by_default() -> None:
    hits = [hit("a" * 3500, 1.0), hit("b" * 3500, 0.5), hit("c" * 3500, 0.1)]
    assert pack(hits, context_window=8192, max_tokens=4096, context_chunks=64) == whole(hits[:2])


def test_shipped_defaults_fit_eight_annotated_full_size_chunks_in_an_8k_model() -> None:
    settings = load_settings(user_file=None, env={})
    prose = " ".join(f"Sentence {i} says something about pumps, valves and seals." for i in range(2000))
    chars, overlap = window_chars(settings.chunk.size_tokens, settings.chunk.overlap_pct)
    spans = window_spans(prose, chars, overlap)
    assert len(spans) > 10 and max(b - a for a, b in spans) >= chars - 200      # real, full-size chunks
    annotation = '"Sentence 12 says something about pumps." This quote names the pumps the question asks about.' * 3
    sources = [SessionSource(number=i + 1, chunk=hit(prose[a:b], 1.0).chunk, score=1.0, rel_score=1.0,
                             legs=("vector",), state=AnnotationState.RELEVANT, annotation=annotation)
               for i, (a, b) in enumerate(spans[:12])]
    window = settings.llm.context_window or DEFAULT_CONTEXT_WINDOW
    assert window == 8192
    packed = pack(sources, query="pumps", context_window=window, max_tokens=settings.llm.max_tokens,
                  context_chunks=settings.llm.context_chunks)
    assert sum(span is None for _, span in packed) >= 8                         # eight of them whole


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


def test_every_source_packing_keeps_a_window_for_each_lower_source() -> None:
    """Budget 600 tokens (2600 - 0 - 2000); four 700-char sources cost 200 + 40 = 240 each whole, a 200-char
    window 58 + 40 = 98. Best first: two whole (480), the third as a window of the 120 tokens left (280 chars),
    the fourth left out. Every source: the first whole (240 + 3 x 98 reserved <= 600), then the second does not
    fit whole with two windows reserved (240 + 240 + 196 > 600), so the three left share the 360 tokens left:
    120 each, a window of up to (120 - 40) x 3.5 = 280 chars (what a shorter window leaves goes to the next),
    and all four reach the prompt within the budget."""
    sentence = "Valves leak when seats wear. "
    items = [(sentence * 25)[:700] for _ in range(4)]
    best_first = pack(items, query="valve seats", context_window=2600, max_tokens=0, context_chunks=64)
    assert [span is None for _, span in best_first] == [True, True, False]
    every = pack(items, query="valve seats", context_window=2600, max_tokens=0, context_chunks=64,
                 every_source=True)
    assert [span is None for _, span in every] == [True, False, False, False]
    second = every[1][1]
    assert second is not None and 0 < second[1] - second[0] <= 280
    assert sum(chunk_cost(text if span is None else text[span[0]:span[1]]) for text, span in every) <= 600
    # room for all of them whole: the same as best first
    assert pack(items, query="valve seats", context_window=10_000, max_tokens=0, context_chunks=64,
                every_source=True) == whole(items)


def test_every_source_packing_with_room_for_few_windows_packs_as_many_as_fit() -> None:
    """Budget 300 tokens: three 200-char windows (98 each) fit, a fourth does not; the three share the room."""
    items = [("Valves leak when seats wear. " * 25)[:700] for _ in range(6)]
    every = pack(items, query="valve seats", context_window=2300, max_tokens=0, context_chunks=64,
                 every_source=True)
    assert len(every) == 3 and all(span is not None for _, span in every)


def test_every_source_packing_gives_at_least_the_smallest_window_it_reserved() -> None:
    """The best source carries a 700-char annotation (200 tokens, counted in any window of it), the two below it
    none: their smallest windows cost 298, 98 and 98 tokens. Budget 500 holds the three (494), but an even
    share, 500 // 3 = 166 tokens, is less than the first one's smallest window: it still gets that window
    (not nothing, which left the answer with no source at all), and the two below it share what is left."""
    text = ("Valves leak when seats wear. " * 25)[:700]

    def source(number: int, note: int) -> SessionSource:
        return SessionSource(number=number, chunk=hit(text, 1.0).chunk, score=1.0, rel_score=1.0, legs=("vector",),
                             state=AnnotationState.RELEVANT, annotation="q" * note)

    every = pack([source(1, 700), source(2, 0), source(3, 0)], query="valve seats", context_window=2500,
                 max_tokens=0, context_chunks=64, every_source=True)
    assert [s.number for s, _ in every] == [1, 2, 3] and all(span is not None for _, span in every)
