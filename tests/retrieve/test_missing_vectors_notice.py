"""What a query says about a collection's chunks without vectors follows why they have none: an ingest still
embedding them ("embedding in progress: 0 of N"), an ingest cut before its end ("ingest cancelled: run it
again to finish"), or an ingest that could not reach the embedder ("no embeddings yet ... Re-run the
ingest"). Told to re-run an ingest that is running, a user would start a second one into a busy collection."""

from __future__ import annotations

from collections.abc import Callable

from ragtui.config import Settings
from ragtui.library import CollectionRegistry
from tests.collection_builder import build_collection
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
