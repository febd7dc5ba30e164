"""The per-file cap that respects long documents (`retrieve.per_file_cap`, postprocess.py).

The long-document test ingests a real multi-topic manual through the real ingest
and the fake Ollama: four example listings repeat the query's words more often
than the one section that explains them, so that section is the file's fifth
distinct passage (55 chunks at 64 tokens, each listing in two or more
overlapping chunks). RAGWeed's flat cap of 2 shows two overlapping chunks of one
listing; the passages cap (7 for 55 chunks) shows each listing once and then
the explanation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from ragtui.config import Settings
from ragtui.retrieve.postprocess import cap_passages, passages_allowed
from ragtui.workspace import Workspace

NOUNS = ("harbour", "orchard", "violin", "glacier", "lantern", "meadow", "bakery", "compass", "quarry", "falcon",
         "tapestry", "canyon", "pottery", "saddle", "beacon", "marble")
ADJECTIVES = ("quiet", "amber", "narrow", "ancient", "windy", "crimson", "gentle", "rusty")
LISTING = "Example listing: plot with logscale axis. Again logscale axis. Then logscale axis once more."
EXPLANATION = ("Logarithmic scales: the logscale command makes an axis logarithmic, "
               "with base ten unless a base is given.")


def filler(section: int, sentences: int = 7) -> str:
    return " ".join(f"The {ADJECTIVES[(section + j) % 8]} {NOUNS[(section * 3 + j) % 16]} stood near the "
                    f"{NOUNS[(section + 5 * j) % 16]} in chapter {section}." for j in range(sentences))


def manual() -> str:
    sections = []
    for i in range(14):
        body = filler(i)
        if i in (2, 4, 6, 8):
            body = f"{filler(i, 3)} {LISTING} {filler(i + 20, 3)}"
        if i == 11:
            body = f"{filler(i, 3)} {EXPLANATION} {filler(i + 20, 3)}"
        sections.append(f"Chapter {i}\n\n{body}\n")
    return "\n".join(sections)


def top_sources(make_settings: Callable[..., Settings], tmp_path: Path, rule: str) -> list[str]:
    settings = make_settings("chunk.size_tokens=64", f"retrieve.per_file_cap={rule}")
    docs = tmp_path / "docs"
    if not docs.exists():
        docs.mkdir()
        (docs / "manual.txt").write_text(manual(), encoding="utf-8")
        (docs / "recipes.txt").write_text("Knead the dough and let it rise overnight before baking.", encoding="utf-8")

    async def run() -> list[str]:
        async with Workspace(settings) as workspace:
            if not workspace.registry.exists("c"):
                [_ async for _ in workspace.ingest([docs], "c")]
            found = await workspace.retrieve("logscale axis", ["c"])
            return [h.chunk.text for h in found.hits if h.chunk.meta.source == "manual.txt"]

    return asyncio.run(run())


def test_a_long_manual_gives_its_distinct_passages(make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    flat = top_sources(make_settings, tmp_path, "flat")
    assert len(flat) == 2 and not any("Logarithmic" in text for text in flat)
    passages = top_sources(make_settings, tmp_path, "passages")
    assert any("Logarithmic scales" in text for text in passages)
    assert sum(LISTING.split(":")[0] in text for text in passages) <= 4   # each listing at most once


def test_passages_allowed_grows_with_the_file() -> None:
    assert [passages_allowed(n, 2) for n in (0, 1, 8, 9, 100, 400)] == [2, 2, 2, 3, 10, 20]
    assert passages_allowed(4, 5) == 5


def test_cap_passages_drops_overlaps_and_caps_each_file() -> None:
    # (file, start, end) best first
    items = [("a", 0, 100), ("a", 50, 150), ("b", 0, 10), ("a", 100, 200), ("a", 300, 400), ("a", 500, 600),
             ("b", 5, 8), ("c", -1, -1), ("c", -1, -1)]
    out = cap_passages(items, key=lambda t: t[0],
                       span=lambda t: (t[1], t[2]) if t[1] >= 0 else None,
                       allowed=lambda f: 3 if f == "a" else 2)
    # a: (50,150) overlaps (0,100); (100,200) only touches it; (500,600) is a 4th: over a's 3
    assert out == [("a", 0, 100), ("b", 0, 10), ("a", 100, 200), ("a", 300, 400), ("c", -1, -1), ("c", -1, -1)]
