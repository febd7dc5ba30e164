"""`ragtui mcp` opens the collections' stores as it starts, before any search: a real `ragtui mcp` subprocess,
the official SDK's client, collections ingested through the real CLI with the fake Ollama over HTTP. What the
server process holds open is read from the operating system (psutil), so no test hook stands in for the load."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import psutil
import pytest

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama
from tests.test_mcp_server import call, connected

pytestmark = pytest.mark.xdist_group("mcp-server")


@pytest.fixture(scope="module")
def ollama() -> Iterator[FakeOllama]:
    server = FakeOllama().start()
    yield server
    server.stop()


def ingested(root: Path, ollama: FakeOllama) -> Path:
    for name, text in (("pumps", "A centrifugal pump moves water by spinning an impeller inside its casing."),
                       ("roofs", "Clay tiles on a pitched roof shed rain into the gutters along the eaves.")):
        (root / name).mkdir()
        (root / name / f"{name}.txt").write_text(text)
        done = cli(root, ollama.url, "ingest", str(root / name), "-c", name)
        assert done.returncode == 0, done.stderr
    return root


def server_process() -> psutil.Process:
    [server] = [p for p in psutil.Process().children(recursive=True) if "mcp" in p.cmdline()]
    return server


def held(process: psutil.Process) -> set[str]:
    """The files the process has open or mapped."""
    maps = {m.path for m in process.memory_maps(grouped=True)}
    return maps | {f.path for f in process.open_files()}


def wait_holding(process: psutil.Process, wanted: set[str], seconds: float = 60) -> set[str]:
    deadline = time.monotonic() + seconds
    while not wanted <= (now := held(process)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return now


async def test_the_server_opens_every_collections_stores_before_the_first_search(ollama: FakeOllama,
                                                                                   tmp_path: Path) -> None:
    """Chroma's vectors (its SQLite file open) and the keyword index's posting arrays (memory-mapped) of both
    collections are open before the client has searched; the first search then finds what it found before."""
    home = ingested(tmp_path, ollama)
    stores = home / "data" / "collections"
    wanted = {str(stores / name / "chroma" / "chroma.sqlite3") for name in ("pumps", "roofs")}
    wanted |= {str(p) for name in ("pumps", "roofs") for p in (stores / name / "whoosh").glob("*.bm25_docs.npy")}
    assert len(wanted) == 4
    async with connected(home, ollama) as client:
        now = await anyio.to_thread.run_sync(wait_holding, server_process(), wanted)
        assert wanted <= now, sorted(wanted - now)
        found = await call(client, "search", query="impeller casing water", limit=2)
    assert found["notices"] == [] and not found["keyword_only"]
    assert found["results"][0]["collection"] == "pumps"


async def test_a_collection_that_cannot_be_opened_is_reported_once_by_the_search(ollama: FakeOllama,
                                                                                  tmp_path: Path) -> None:
    """The early opening leaves a damaged store's error to the search that reads it: one notice there, the other
    collection still searched, and the server goes on answering."""
    home = ingested(tmp_path, ollama)
    keyword = home / "data" / "collections" / "roofs" / "whoosh"
    shutil.rmtree(keyword)
    keyword.write_text("not an index")
    async with connected(home, ollama) as client:
        found = await call(client, "search", query="impeller casing water", limit=2)
        again = await call(client, "search", query="clay tiles roof", limit=2)
    assert found["results"][0]["collection"] == "pumps"
    assert len([n for n in found["notices"] if "roofs is damaged" in n]) == 1, found["notices"]
    assert len([n for n in again["notices"] if "roofs is damaged" in n]) == 1, again["notices"]
