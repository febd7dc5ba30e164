"""Why a source was found (the details formatter, `ragtui query`) and neighbour-chunk expansion."""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.config import Settings
from ragtui.model.chunks import Chunk, ChunkMeta, LegRank, chunk_id
from ragtui.model.conversation import SessionSource
from ragtui.model.retrieval import Hit
from ragtui.retrieve.explain import details, evidence_line
from ragtui.retrieve.neighbors import expand
from ragtui.workspace import Workspace
from tests.cli_run import cli
from tests.collection_builder import build_collection
from tests.fake_ollama import FakeOllama

FILES = {"valves.md": ["Gate valves control the flow.", "Valve seats wear out."],
         "pumps.md": ["Centrifugal pumps need priming."],
         "misc.md": ["Paint the fence.", "Oil the hinges.", "Sweep the floor."]}


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    settings = make_settings()
    build_collection(settings, "docs", FILES)
    return settings


async def test_details_for_a_crafted_query(settings: Settings, fake_ollama: FakeOllama, tmp_path: object,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with Workspace(settings) as workspace:
        result = await workspace.retrieve("valve seats", ["docs"])
    top = result.hits[0]
    assert top.chunk.text == "Valve seats wear out."
    legs = {e.leg: e for e in top.evidence}
    assert set(legs) == {"vector", "keyword", "fused"}
    assert legs["keyword"].rank == 1 and legs["fused"].rank == 1 and legs["fused"].score == top.score
    assert legs["vector"].score == max(e.score for h in result.hits for e in h.evidence if e.leg == "vector")
    # RRF over the two legs, from the ranks the view shows (retrieve.rrf_k = 20): the mean of the legs' terms
    assert top.score == pytest.approx((1 / (20 + legs["vector"].rank) + 1 / (20 + legs["keyword"].rank)) / 2)
    source = SessionSource(number=1, chunk=top.chunk, score=top.score, rel_score=top.rel_score, legs=top.legs,
                           evidence=top.evidence)
    lines = details(result.meta, [source])[7:]
    source_part = details(result.meta, [source])[:7]
    n = 6   # chunks in the collection; IDF = ln((N + 1) / (df + 1))
    assert lines[:6] == [
        "Collection docs: keyword tier 2 (any word or synonym, OR); fusion rrf",   # AND found fewer than 3
        f"  words kept: seats (IDF {math.log(7 / 2):.2f}), valve (IDF {math.log((n + 1) / 3):.2f})",
        "  words dropped: none",
        f"  mean IDF {(math.log(7 / 2) + math.log(7 / 3)) / 2:.2f} (gate passed)",
        "  synonyms: none",
        "  AND tier found 1",
    ]
    assert lines[6].startswith("  hits: vector ") and "keyword 2" in lines[6]
    assert source_part == [
        "Source [1] docs/valves.md",
        f"  vector leg: rank {legs['vector'].rank}, score {legs['vector'].score:.4f}",
        f"  keyword leg: rank 1, score {legs['keyword'].score:.4f}",
        f"  fused: rank 1, score {top.score:.4f}",
        "  rerank: none configured",
        f"  session score {top.score:.4f}, relative 1.00; found by vector+keyword",
        "",
    ]
    # `ragtui query` prints the same collection lines and each hit's evidence
    argv = ["--config", os.devnull, "--data-dir", str(settings.data_dir),
            "--ollama-host", fake_ollama.url, "--set", "synonyms.enabled=false", "query", "valve seats", "-c", "docs"]
    assert await asyncio.to_thread(main, argv) == 0
    out = capsys.readouterr().out
    for line in lines[:7]:
        assert line in out.splitlines()
    assert evidence_line(top.evidence) in out.splitlines()[1]


def test_details_name_both_runs_of_a_follow_up_and_neighbours() -> None:
    meta = ChunkMeta(collection="c", source="a.md", file_hash="h", format="md", chunk_index=3, char_start=0,
                     char_end=1)
    source = SessionSource(number=9, chunk=Chunk("x", "t", meta), score=0.5, rel_score=0.4, legs=(),
                           evidence=(LegRank("query", 2, 0.1), LegRank("rewrite:rerank", 1, 0.9)),
                           neighbor_of=7, distance=2)
    lines = details(None, [source], rewrite="what about seals?")
    assert lines[6:] == ["(no retrieval ran)", "", "(no retrieval ran)"]
    assert lines[:6] == ["Source [9] c/a.md", "  neighbour of [7], 2 chunk(s) away: score = that hit's x 0.85^2",
                         "  typed question: rank 2, score 0.1000", "  rewrite · rerank leg: rank 1, score 0.9000",
                         "  session score 0.5000, relative 0.40; found by neighbour expansion", ""]


def _chunk(source: str, index: int) -> Chunk:
    meta = ChunkMeta(collection="c", source=source, file_hash="h", format="md", chunk_index=index, char_start=0,
                     char_end=1)
    return Chunk(chunk_id(source, index), f"{source}#{index}", meta)


def test_neighbour_expansion_order_and_scores() -> None:
    stored = {c.id: c for c in [_chunk("a.md", i) for i in range(6)] + [_chunk("b.md", i) for i in range(2)]}
    asked: list[Sequence[str]] = []

    def fetch(collection: str, ids: Sequence[str]) -> list[Chunk]:
        asked.append(ids)
        return [stored[i] for i in ids if i in stored]

    a2, a3, b0 = stored[chunk_id("a.md", 2)], stored[chunk_id("a.md", 3)], stored[chunk_id("b.md", 0)]
    hits = [Hit(a2, 1.0, 1.0, ("vector",)), Hit(b0, 0.9, 0.5, ("keyword",)), Hit(a3, 0.2, 0.0, ("keyword",))]
    assert expand(hits, 0, fetch, 16) == hits and not asked
    out = expand(hits, 2, fetch, 16)
    got = [(h.chunk.text, round(h.score, 6), h.neighbor_of and stored[h.neighbor_of].text, h.distance) for h in out]
    assert got == [
        ("a.md#2", 1.0, "", 0),
        ("b.md#0", 0.9, "", 0),
        ("a.md#1", 0.85, "a.md#2", 1),                    # a3 is a hit: never demoted to a neighbour
        ("b.md#1", round(0.9 * 0.85, 6), "b.md#0", 1),
        ("a.md#0", round(0.85 ** 2, 6), "a.md#2", 2),
        ("a.md#4", round(0.85 ** 2, 6), "a.md#2", 2),     # a3's neighbour at 1 scores less than a2's at 2
        ("a.md#3", 0.2, "", 0),
        ("a.md#5", round(0.2 * 0.85 ** 2, 6), "a.md#3", 2),
    ]
    assert out[3].rel_score == pytest.approx(0.5 * 0.85) and out[2].legs == ()
    assert all(chunk_id("a.md", -1) not in ids for ids in asked)       # nothing before the first chunk
    assert len(expand(hits, 9, fetch, 16)) == len(out)                  # the window is capped at 5
    capped = expand(hits, 2, fetch, 5)                                  # the hits stay; the best neighbours fill
    assert [h.chunk.text for h in capped] == ["a.md#2", "b.md#0", "a.md#1", "b.md#1", "a.md#3"]


async def test_neighbours_come_from_the_ingested_file_and_are_numbered_as_such(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings("retrieve.neighbor_window=1", "chunk.size_tokens=16", "chunk.overlap_pct=0",
                             "retrieve.max_chunks_per_file=1", "annotation.enabled=false")
    text = " ".join(f"Paragraph {w} talks about topic {w}." for w in
                    ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot"))
    with Workspace(settings) as workspace:
        async for _ in workspace.ingest_documents("docs", [("long.md", text)]):
            pass
        result = await workspace.retrieve("charlie", ["docs"])
        session = workspace.new_session("charlie", ["docs"])
        async for _ in session.run():
            pass
        await session.aclose()
    hit, *neighbours = result.hits
    assert "charlie" in hit.chunk.text and not hit.neighbor_of
    assert sorted(n.chunk.meta.chunk_index for n in neighbours) == [hit.chunk.meta.chunk_index - 1,
                                                                    hit.chunk.meta.chunk_index + 1]
    assert all(n.neighbor_of == hit.chunk.id and n.score == pytest.approx(hit.score * 0.85) for n in neighbours)
    first, *rest = session.sources
    assert [(s.neighbor_of, s.distance) for s in rest] == [(first.number, 1), (first.number, 1)]
    assert sorted(session.turn.prompt_numbers) == [1, 2, 3]                # neighbours go to synthesis


def test_neighbours_count_against_the_annotation_cap_through_ask(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """retrieve.neighbor_window = 2 around 4 hits could add 16 neighbours; retrieve.annotate_max = 6 holds every
    source annotated to 6: the 4 hits and the 2 best neighbours."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("pumps", "valves", "seals", "gauges"):
        words = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf")
        (docs / f"{name}.md").write_text(" ".join(f"Paragraph {w} of the {name} notes talks about {w} {name}."
                                                  if w != "delta" else f"The impeller priming of {name} is here."
                                                  for w in words))
    sizes = ("--set", "chunk.size_tokens=16", "--set", "chunk.overlap_pct=0")
    assert cli(tmp_path, fake_ollama.url, *sizes, "ingest", str(docs), "-c", "docs").returncode == 0
    asked = cli(tmp_path, fake_ollama.url, *sizes, "--set", "retrieve.neighbor_window=2", "--set",
                "retrieve.annotate_max=6", "--set", "retrieve.per_file_cap=flat", "--set",
                "retrieve.max_chunks_per_file=1", "ask", "impeller priming", "-c", "docs", "--json")
    assert asked.returncode == 0, asked.stderr
    sources = json.loads(asked.stdout)["sources"]
    hits = [s for s in sources if not s["neighbor_of"]]
    annotations = [c for c in fake_ollama.calls("/api/chat") if "EXTRACT" in c.body["messages"][-1]["content"]]
    assert len(sources) == 6 and len(annotations) == 6, (len(sources), len(annotations))
    assert sorted(s["label"] for s in hits) == ["docs/gauges.md", "docs/pumps.md", "docs/seals.md", "docs/valves.md"]
