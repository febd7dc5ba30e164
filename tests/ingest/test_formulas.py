"""The pure formulas against hand-computed cases: chunk windows, markdown sections, entropy, averaging."""

from __future__ import annotations

import itertools
import math
import os

import pytest

from ragtui.ingest.chunking import (
    code_fences,
    find_boundary,
    markdown_sections,
    markdown_spans,
    mid_word,
    next_start,
    trim_span,
    window_chars,
    window_spans,
)
from ragtui.ingest.embedding import l2_normalize, mean_normalized, split_long
from ragtui.ingest.entropy import (
    GARBAGE,
    SPARSE,
    TOC,
    junk_reason,
    shannon_entropy,
    text_entropy,
    toc_ratio,
    word_count,
)
from ragtui.ingest.structure import parts


def test_window_chars_is_tokens_times_four_and_floor_overlap() -> None:
    assert window_chars(2048, 50) == (8192, 4096)
    assert window_chars(1024, 33) == (4096, 1351)


def test_window_cuts_after_sentence_end_and_starts_at_a_sentence_or_word() -> None:
    text = "One two. Three four. Five six."
    # pos 0: '.' at 7 -> cut 8; overlap region [4, 8) has no sentence start -> word start 4 ("two.");
    # pos 4: space at 14 -> cut 15; region [11, 15) is mid-word "ee f" -> sentence start 9 is before it, the
    # nearest word start back from 11 is 9 ("Three"); pos 9: '.' at 19 -> 20; region [16, 20) "our." ->
    # back to 15 ("four."); pos 15: space at 25 -> 26; region [22, 26) -> back to 21 ("Five"); then the rest.
    assert window_spans(text, 12, 4) == [(0, 8), (4, 15), (9, 20), (15, 26), (21, 30)]


def test_next_start_prefers_a_sentence_start_in_the_overlap_then_a_word_start() -> None:
    text = "alpha beta. Gamma delta epsilon"
    assert next_start(text, 8, 20, 0, 16) == 12          # "Gamma": a sentence start in [8 - 4, 8 + 8)
    assert next_start(text, 14, 24, 0, 4) == 18          # none in [13, 16): the next word start, "delta"
    assert next_start(text, 2, 30, 0, 4) == 6            # the sentence start 12 is beyond 2 + 4/2: word start
    assert next_start("xxxxxxxxxxxx", 3, 8, 3) == 3      # no word start anywhere: RAGWeed's own start
    cjk = "机器学习很有趣。深度学习也是。"
    assert next_start(cjk, 6, 12, 0, 8) == 8             # after the CJK full stop
    assert next_start("机器学习很有趣", 2, 6) == 2       # between CJK characters is a word start
    assert mid_word("buffer", 1) and not mid_word("a buffer", 2) and not mid_word("机器", 1)


def test_window_without_any_boundary_cuts_hard() -> None:
    assert window_spans("abcdefghijklmnopqrstuvwxyz", 10, 0) == [(0, 10), (10, 20), (20, 26)]


def test_boundary_lookback_limits() -> None:
    body = "x" * 300
    text = "Start. " + body                      # the only '.' is 300 chars before the window end
    assert find_boundary(text, 0, len(text)) == len(text)      # beyond 200: not used, no whitespace: hard cut
    spaced = "a" * 100 + " " + "b" * 60
    assert find_boundary(spaced, 0, len(spaced)) == len(spaced)  # whitespace 60 back: beyond 50
    spaced = "a" * 100 + " " + "b" * 40
    assert find_boundary(spaced, 0, len(spaced)) == 101


def test_real_sizes_overlap_by_ovl() -> None:
    sentence = "The quick brown fox jumps over the lazy dog. "
    text = sentence * 500
    chars, ovl = window_chars(256, 50)
    spans = window_spans(text, chars, ovl)
    for (a1, b1), (a2, _) in itertools.pairwise(spans):
        assert text[b1 - 1] == "." and b1 - ovl <= a2 < b1 - ovl + len(sentence)   # overlap within a sentence
        assert text[a2 - 2:a2] == ". " and b1 - a1 <= chars                       # of OVL, starting one
    assert spans[-1][1] == len(text)


def test_markdown_sections_keep_heading_path_and_ignore_headings_in_fences() -> None:
    text = "intro\n# A\ntext a\n```\n# not a heading\n```\n## B\ntext b\n# C\nc\n"
    sections = markdown_sections(text)
    assert [s.heading for s in sections] == ["", "A", "A > B", "C"]
    assert text[sections[1].start:sections[1].end] == "# A\ntext a\n```\n# not a heading\n```\n"


def test_markdown_window_cuts_a_long_code_fence_only_at_line_ends() -> None:
    code = "```python\n" + "".join(f"x{i} = {i}.\n" for i in range(30)) + "```\n"
    text = "# T\n" + "Words here. " * 3 + "\n" + code + "Tail text.\n"
    fences = code_fences(text)
    assert len(fences) == 1
    f_start, f_end = fences[0]
    spans = markdown_spans(text, 80, 20, [(u.start, u.end) for u in parts(text, 80)])
    for a, b, heading in spans:
        assert heading == "T"
        assert not (f_start < b < f_end) or text[b - 1] == "\n", (a, b)
    starts = [a for a, _, _ in spans]
    assert len(spans) <= len(text) // (80 - 20) + 2 and starts == sorted(set(starts))  # no creeping windows


def test_long_fence_does_not_multiply_chunks() -> None:
    code = "```\n" + "".join(f"line {i} of code.\n" for i in range(1500)) + "```\n"
    text = "# Doc\n" + "Prose sentence here. " * 1100 + "\n" + code + "More prose. " * 100
    spans = markdown_spans(text, 8192, 4096, [(u.start, u.end) for u in parts(text, 8192)])
    assert len(spans) < 2 * len(text) // 4096 + 2


def test_trim_span() -> None:
    assert trim_span("  ab  ", 0, 6) == (2, 4)
    assert trim_span("    ", 0, 4) == (4, 4)


def test_entropy_of_random_bytes_prose_and_whitespace() -> None:
    assert shannon_entropy(b"") == 0.0
    assert shannon_entropy(b"aaaa") == 0.0
    assert shannon_entropy(b"abab") == pytest.approx(1.0)
    assert shannon_entropy(b"abcd") == pytest.approx(2.0)
    garbage = os.urandom(20_000).decode("latin-1")
    assert text_entropy(garbage, "latin-1") > 7.9          # over the file's own bytes
    prose = "It was the best of times, it was the worst of times, it was the age of wisdom. " * 20
    assert 3.5 < text_entropy(prose) < 6
    assert text_entropy(" \n \n   \n") < 1.0


def test_junk_reasons() -> None:
    assert junk_reason(7.5, 100, "x", 0.5, 7.0, 0.6) == GARBAGE
    assert junk_reason(0.2, 2, "-- --", 0.5, 7.0, 0.6) == SPARSE
    assert junk_reason(0.2, 9, "a a a a a a a a a", 0.5, 7.0, 0.6) is None   # low entropy but 5+ words
    toc = "Contents\nIntroduction ........ 1\nMethods ........ 12\nResults\t31\n"
    assert toc_ratio(toc) == pytest.approx(0.75)
    spaced = "Contents\n1 Overview . . . . . . . . . 1\n1.1 Getting started . . . . . . 3\nIndex . . . . . 211\n"
    assert toc_ratio(spaced) == pytest.approx(0.75)                         # texinfo/LaTeX spaced leaders
    index = "Index\nbuffer, 12, 45-47\nbuffer overflow, 48\ncache, 3, 19–21, 100\n"
    assert toc_ratio(index) == pytest.approx(0.75)                          # back-of-book index entries
    prose = "We wrote 12 pages.\nThe buffer holds data, and more.\nIt ends here.\n"
    assert toc_ratio(prose) == 0.0
    assert junk_reason(4.0, 8, toc, 0.5, 7.0, 0.6) == TOC
    assert junk_reason(4.0, 8, toc, 0.5, 7.0, 0.0) is None                  # 0 turns the TOC filter off
    assert word_count("Hello, world: 3 words") == 4


def test_split_long_overlaps_by_200() -> None:
    text = "".join(chr(65 + i % 26) for i in range(70_000))
    parts = split_long(text)
    assert [len(p) for p in parts] == [30_000, 30_000, 10_400]
    assert parts[0][-200:] == parts[1][:200] and parts[1][-200:] == parts[2][:200]
    assert split_long("short") == ["short"]


def test_mean_normalized_and_l2() -> None:
    assert l2_normalize([3.0, 4.0]) == pytest.approx([0.6, 0.8])
    assert l2_normalize([0.0, 0.0]) == [0.0, 0.0]
    v = mean_normalized([[1.0, 0.0], [0.0, 1.0]])
    assert v == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2)])


def test_entropy_clusters_follow_ragweed_2g() -> None:
    from ragtui.ingest.clusters import cluster_label, entropy_clusters, entropy_histogram, find_peaks

    assert entropy_histogram([0.0, 0.39, 0.41, 7.99, 9.5]) == [2, 1] + [0] * 17 + [2]
    assert find_peaks([0, 10, 3, 0, 0, 8, 8, 1]) == [1, 6]
    assert find_peaks([1] * 40) == []                        # flat: no bin holds more than 5%
    assert cluster_label(7.5, 100, 50, 100, 0.5, 7.0) == ("garbage", True)
    assert cluster_label(0.3, 2, 50, 100, 0.5, 7.0) == ("sparse/empty", True)
    assert cluster_label(4.5, 200, 1, 1000, 0.5, 7.0) == ("micro-cluster", False)
    assert cluster_label(2.0, 200, 50, 100, 0.5, 7.0) == ("boilerplate", False)
    assert cluster_label(4.5, 12, 50, 100, 0.5, 7.0) == ("code/technical", False)
    assert cluster_label(4.5, 200, 50, 100, 0.5, 7.0) == ("natural language", False)
    stats = [(4.3, 300)] * 60 + [(4.5, 250)] * 20 + [(1.9, 40)] * 20
    clusters = entropy_clusters(stats, 0.5, 7.0)
    assert [(c.label, c.size) for c in clusters] == [("boilerplate", 20), ("natural language", 80)]
    assert clusters[1].h_mean == pytest.approx(4.35)


def test_eta_adds_files_left_and_embeddings_left() -> None:
    from ragtui.ingest.pipeline import estimate_eta

    assert estimate_eta(10.0, 5, 20, 0, 0.0) == pytest.approx(30.0)      # 2 s per file, 15 left
    assert estimate_eta(10.0, 5, 20, 100, 50.0) == pytest.approx(32.0)   # + 100 chunks at 50/s
    assert estimate_eta(10.0, 20, 20, 100, 50.0) == pytest.approx(2.0)   # files done, embedding goes on
    assert estimate_eta(10.0, 20, 20, 0, 0.0) == 0.0
    assert estimate_eta(0.0, 0, 20, 0, 0.0) is None
    assert estimate_eta(10.0, 20, 20, 100, 0.0) is None
