"""What a query says about a collection's chunks without vectors follows why they have none: an ingest still
embedding them ("embedding in progress: 0 of N"), an ingest cut before its end ("ingest cancelled: run it
again to finish"), or an ingest that could not reach the embedder ("no embeddings yet ... Re-run the
ingest"). Told to re-run an ingest that is running, a user would start a second one into a busy collection."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragtui.config import Settings
from ragtui.library import CollectionRegistry
from tests.cli_run import cli, command
from tests.collection_builder import build_collection
from tests.fake_ollama import FakeOllama
from tests.retrieve.test_pipeline import NOTES, retrieve


def chunk_count(settings: Settings, name: str) -> int:
    return CollectionRegistry(settings).open(name).keyword.doc_count()


async def test_a_query_during_the_ingest_says_embedding_is_in_progress(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    collection = build_collection(settings, "raw", NOTES, models=[])
    collection.update_manifest(state="ingesting")
    chunks = chunk_count(settings, "raw")
    with collection.ingest_lock():                  # an ingest is running (held as an ingest holds it)
        result = await retrieve(settings, "filtration", ["raw"])
    assert result.keyword_only and result.hits
    assert [n for n in result.notices if "raw" in n] == [
        f"Collection raw: embedding in progress: 0 of {chunks}; the chunks not embedded yet are found by keyword "
        "matches only."]


async def test_a_query_after_a_cut_ingest_says_run_it_again(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    build_collection(settings, "raw", NOTES, models=[]).update_manifest(state="ingesting")   # nobody holds it
    chunks = chunk_count(settings, "raw")
    result = await retrieve(settings, "filtration", ["raw"])
    assert result.keyword_only and result.hits
    assert [n for n in result.notices if "raw" in n] == [
        f"Collection raw: ingest cancelled: run it again to finish (0 of {chunks} chunks embedded; the others are "
        "found by keyword matches only)."]
    assert not any("no embeddings yet" in n for n in result.notices)


def test_a_query_during_a_first_ingest_searches_the_part_embedded_so_far(tmp_path: Path,
                                                                        fake_ollama: FakeOllama) -> None:
    """Through the CLI: while the first ingest of a collection is still embedding, a vector-mode query finds
    the chunks embedded so far, and the note's "the chunks not embedded yet" is what it says (the collection
    listed no model until its ingest ended, so no vector was searched at all and vector mode said "no
    results")."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(24):
        (docs / f"pump{i:02}.txt").write_text(f"Pump model {i} moves water through filtration stage {i}. " * 3)
    small = ("--set", "embed.batch_size=2", "--set", "chunk.size_tokens=16", "--set", "chunk.overlap_pct=0")
    fake_ollama.embed_delay = 0.3                       # 2 chunks a call: a page of 16 chunks every ~2.4 s
    argv, env = command(tmp_path, fake_ollama.url, *small, "ingest", str(docs), "-c", "pumps")
    ingest = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found: dict[str, Any] = {}
    try:
        while ingest.poll() is None and not found:
            queried = cli(tmp_path, fake_ollama.url, "--set", "retrieve.min_similarity=0", "query",
                          "pump water filtration", "-c", "pumps", "--mode", "vector", "--json")
            result = json.loads(queried.stdout) if queried.returncode == 0 else {}
            if result.get("nodes") and ingest.poll() is None:
                found = result
    finally:
        _, err = ingest.communicate(timeout=300)
    assert ingest.returncode == 0, err
    assert found, "no vector-mode query found anything while the first ingest ran"
    notes = [n for n in found["notices"] if "Collection pumps: embedding in progress" in n]
    assert len(notes) == 1, ("vector hits only once the ingest had ended", found["notices"])
    note = notes[0]
    embedded, total = (int(x.replace(",", "")) for x in re.findall(r"in progress: ([\d,]+) of ([\d,]+)", note)[0])
    assert 0 < embedded < total and len(found["nodes"]) <= embedded
    assert note.endswith("the chunks not embedded yet cannot be found in vector mode (hybrid and keyword mode find "
                         "them by keyword).")
    assert not any("no results" in n for n in found["notices"])
