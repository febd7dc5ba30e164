"""The same ingest and a query against a real Chroma server (`chroma run`) on loopback, chosen by config only."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from ragtui.config import Settings
from ragtui.library import CollectionRegistry
from tests.fake_ollama import hashed_embedding
from tests.ingest.conftest import SMALL, ingest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[int]:
    exe = shutil.which("chroma", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the chroma CLI (shipped with chromadb) is not installed")
    port = free_port()
    proc = subprocess.Popen([exe, "run", "--path", str(tmp_path / "server"), "--port", str(port),
                             "--host", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1, trust_env=False).is_success:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "chroma server did not start"
            time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


def test_ingest_and_query_against_chroma_server(make_settings: Callable[..., Settings], chroma_server: int,
                                                tmp_path: Path) -> None:
    settings = make_settings(*SMALL, "chroma.host=127.0.0.1", f"chroma.port={chroma_server}")
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
    assert hits[0][0].meta.source == "b.txt"
    coll.close()
    import chromadb
    from chromadb.config import Settings as ChromaConfig

    server = chromadb.HttpClient(host="127.0.0.1", port=chroma_server,
                                 settings=ChromaConfig(anonymized_telemetry=False))
    from ragtui.stores.vector import chroma_name

    name = chroma_name("ragtui-c", "nomic-embed-text")
    assert name.startswith("ragtui-c-nomic-embed-text-") and name in {c.name for c in server.list_collections()}
    CollectionRegistry(settings).delete("c")
    assert name not in {c.name for c in server.list_collections()}
