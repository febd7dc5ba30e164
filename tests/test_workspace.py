"""The Workspace: lazy, the one owner of open collections, and the engine side of the source viewer and exports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.library import CollectionError, IngestBusy
from ragtui.model import SessionSource
from ragtui.workspace import Workspace
from tests.fake_ollama import FakeOllama

PUMPS = "Centrifugal pumps must be primed before they start. A primed pump starts at 3 bar of pressure.\n"


def source_for(workspace: Workspace, query: str) -> SessionSource:
    import asyncio

    hit = asyncio.run(workspace.retrieve(query, ["c"])).hits[0]
    return SessionSource(number=1, chunk=hit.chunk, score=hit.score, rel_score=hit.rel_score, legs=hit.legs)


@pytest.fixture
def ingested(make_settings: Callable[..., Settings], fake_ollama: FakeOllama, tmp_path: Path) -> Settings:
    import asyncio

    settings = make_settings()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "pumps.txt").write_text("Intro line.\n" + PUMPS)

    async def ingest() -> None:
        async with Workspace(settings) as workspace:
            [_ async for _ in workspace.ingest([tmp_path / "docs"], "c", topic="pumps")]

    asyncio.run(ingest())
    return settings


def test_building_a_workspace_opens_nothing(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    workspace = Workspace(settings)
    assert not settings.data_dir.exists()
    assert workspace.history.list_sessions() == [] and (settings.data_dir / "history.sqlite3").is_file()
    workspace.close()


def test_the_same_open_collection_is_shared_until_close(ingested: Settings) -> None:
    with Workspace(ingested) as workspace:
        first = workspace.collection("c")
        assert workspace.collection("c") is first
        assert [i.topic for i in workspace.list_collections()] == ["pumps"]
        assert first.keyword.doc_count() >= 1 and first.keyword._searcher is not None
    assert first.keyword._searcher is None          # closed with the workspace


def test_document_shows_the_chunk_in_its_file_and_says_when_it_cannot(ingested: Settings) -> None:
    with Workspace(ingested) as workspace:
        source = source_for(workspace, "primed pump")
        view = workspace.document(source)
        assert view.text.startswith("Intro line.") and view.text[view.start:view.end] == source.chunk.text
        assert view.note == ""
        assert view.chunks == ((view.start, view.end),) and view.pages == ()   # one chunk; not a PDF: no pages
        workspace.delete_collection("c")
        gone = workspace.document(source)
    assert (gone.text, gone.start, gone.end) == (source.chunk.text, 0, len(source.chunk.text))
    assert gone.note.startswith("showing the chunk only: no collection named 'c'")


def test_export_writes_the_session_under_the_data_dir(ingested: Settings) -> None:
    with Workspace(ingested) as workspace:
        session = workspace.new_session("How do pumps start?", ["c"])
        session.save()
        path = workspace.export_session(session.id or 0)
    assert path == ingested.data_dir / "exports" / f"session-{session.id}.md"
    assert path.read_text(encoding="utf-8").startswith("# How do pumps start?")


def test_a_second_ingest_into_a_collection_is_busy(ingested: Settings, tmp_path: Path) -> None:
    import asyncio

    async def overlapping() -> None:
        async with Workspace(ingested) as workspace:
            with workspace.collection("c").ingest_lock(), \
                    pytest.raises(IngestBusy, match="another ingest is writing into collection 'c'"):
                [_ async for _ in workspace.ingest([tmp_path / "docs"], "c")]

    asyncio.run(overlapping())
    with Workspace(ingested) as workspace, pytest.raises(CollectionError, match="invalid collection name"):
        workspace.create_collection("no spaces")


def test_document_lists_every_chunk_of_a_long_file_in_order(make_settings: Callable[..., Settings],
                                                            fake_ollama: FakeOllama, tmp_path: Path) -> None:
    import asyncio

    settings = make_settings()
    (tmp_path / "long").mkdir()
    paragraphs = [f"Paragraph {i} says that pump number {i} starts at {i} bar after priming." for i in range(300)]
    (tmp_path / "long" / "pumps.txt").write_text("\n\n".join(paragraphs))

    async def ingest() -> None:
        async with Workspace(settings) as workspace:
            [_ async for _ in workspace.ingest([tmp_path / "long"], "c")]

    asyncio.run(ingest())
    with Workspace(settings) as workspace:
        view = workspace.document(source_for(workspace, "pump number 150"))
    assert len(view.chunks) >= 3 and (view.start, view.end) in view.chunks          # for n / p in the viewer
    assert [s for s, _ in view.chunks] == sorted(s for s, _ in view.chunks)
    assert view.chunks[0][0] == 0 and view.chunks[-1][1] >= len(view.text.rstrip())
