"""The same ingest and a query against a real Chroma server (`chroma run`) on loopback, chosen by config only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragtui.config import Settings
from ragtui.library import CollectionRegistry
from tests.chroma_server import ChromaServer
from tests.fake_ollama import hashed_embedding
from tests.ingest.conftest import SMALL, ingest


def test_ingest_and_query_against_chroma_server(make_settings: Callable[..., Settings], chroma_server: ChromaServer,
                                                tmp_path: Path) -> None:
    settings = make_settings(*SMALL, *chroma_server.settings)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Solar panels convert sunlight into electricity with photovoltaic cells. " * 4)
    (docs / "b.txt").write_text("A toilet flapper seals the tank; a worn flapper leaks water into the bowl. " * 4)
    report = ingest(settings, [docs])
    assert sorted(report.added) == ["a.txt", "b.txt"] and not report.needs_embedding
    coll = CollectionRegistry(settings).open("c")
    assert not (coll.path / "chroma").exists()                    # vectors live on the server
    store = coll.vectors("nomic-embed-text")
    assert store.ids() == coll.keyword.ids()
    hits = store.query(hashed_embedding("worn flapper leaks", 64), top_k=3)
    assert coll.keyword.get([hits[0][0]])[0].meta.source == "b.txt"
    coll.close()
    server: Any = chroma_server.client()
    from ragtui.stores.vector import chroma_name

    name = chroma_name("ragtui-c", "nomic-embed-text")
    assert name.startswith("ragtui-c-nomic-embed-text-") and name in {c.name for c in server.list_collections()}
    CollectionRegistry(settings).delete("c")
    assert name not in {c.name for c in server.list_collections()}
