"""Vectors on a Chroma server (`[chroma] host`), against a real `chroma run` on loopback (tests/chroma_server.py):
the server going away and coming back, two ragtui processes sharing it, and a collection's records kept honest about
what the server holds. Each test keeps to collection names of its own: the server is shared by the whole session."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragtui.config import Settings
from ragtui.stores.vector import chroma_name
from ragtui.workspace import Workspace
from tests.chroma_server import ChromaServer
from tests.cli_run import cli
from tests.fake_ollama import FakeOllama

DOCS = {
    "valve.txt": "The float valve refills the cistern after each flush until the float rises. " * 4,
    "pump.txt": "A centrifugal pump moves water by spinning an impeller inside its casing. " * 4,
    "roof.txt": "Clay tiles on a pitched roof shed rain into the gutters along the eaves. " * 4,
}
QUERY = "float valve cistern"
MODEL = "nomic-embed-text"


def write_docs(folder: Path, docs: dict[str, str] = DOCS) -> Path:
    folder.mkdir(exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text)
    return folder


def ragtui(tmp_path: Path, ollama: FakeOllama, server: ChromaServer, *args: str) -> subprocess.CompletedProcess[str]:
    done = cli(tmp_path, ollama.url, *server.cli_args(), *args)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def query_json(tmp_path: Path, ollama: FakeOllama, server: ChromaServer, name: str) -> dict[str, Any]:
    done = ragtui(tmp_path, ollama, server, "query", QUERY, "-c", name, "--json")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def server_notices(result: dict[str, Any], server: ChromaServer) -> list[str]:
    return [n for n in result["notices"] if f"Chroma server at 127.0.0.1:{server.port} is not reachable" in n]


def test_server_down_answers_keyword_only_with_one_notice_then_both_legs_once_it_is_back(
        tmp_path: Path, fake_ollama: FakeOllama, chroma_server: ChromaServer) -> None:
    docs = write_docs(tmp_path / "docs")
    assert ragtui(tmp_path, fake_ollama, chroma_server, "ingest", str(docs), "-c", "down1").returncode == 0
    ragtui(tmp_path, fake_ollama, chroma_server, "ingest", str(docs), "-c", "down2")     # a second collection
    both = query_json(tmp_path, fake_ollama, chroma_server, "down1")
    assert not both["keyword_only"] and both["vectors_unreachable"] is None and both["notices"] == []

    chroma_server.stop()
    done = ragtui(tmp_path, fake_ollama, chroma_server, "query", QUERY, "-c", "down1", "-c", "down2", "--json")
    assert done.returncode == 0, done.stderr
    down = json.loads(done.stdout)
    assert down["keyword_only"] and down["vectors_unreachable"] == f"127.0.0.1:{chroma_server.port}"
    assert len(server_notices(down, chroma_server)) == 1, down["notices"]        # said once, not per collection
    assert not any("damaged" in n for n in down["notices"]), down["notices"]
    assert down["nodes"][0]["source"] == "valve.txt" and down["nodes"][0]["legs"] == ["keyword"]

    text = ragtui(tmp_path, fake_ollama, chroma_server, "query", QUERY, "-c", "down1")
    assert text.returncode == 0 and text.stdout.count("is not reachable") == 1, text.stdout
    asked = ragtui(tmp_path, fake_ollama, chroma_server, "ask", QUERY, "-c", "down1")
    assert asked.returncode == 0, asked.stderr
    assert "keyword leg only: no vector search was possible" in asked.stdout
    assert f"Chroma server at 127.0.0.1:{chroma_server.port} is not reachable" in asked.stderr + asked.stdout

    chroma_server.start()
    back = query_json(tmp_path, fake_ollama, chroma_server, "down1")
    assert not back["keyword_only"] and back["notices"] == []
    assert back["nodes"][0]["legs"] == ["vector", "keyword"]


def test_a_long_lived_workspace_rides_out_a_server_restart(make_settings: Callable[..., Settings],
                                                          chroma_server: ChromaServer, tmp_path: Path) -> None:
    """The TUI's case: one process, its Chroma client already connected, the server killed and started again."""
    settings = make_settings("chunk.size_tokens=64", *chroma_server.settings)
    docs = write_docs(tmp_path / "docs")

    async def run() -> list[Any]:
        async with Workspace(settings) as workspace:
            async for _ in workspace.ingest([docs], "restart"):
                pass
            found = [await workspace.retrieve(QUERY, ["restart"])]
            chroma_server.stop()
            found.append(await workspace.retrieve(QUERY, ["restart"]))
            chroma_server.start()
            found.append(await workspace.retrieve(QUERY, ["restart"]))
            return found

    before, during, after = asyncio.run(run())
    assert not before.keyword_only and "vector" in before.hits[0].legs
    assert during.keyword_only and during.vectors_unreachable == f"127.0.0.1:{chroma_server.port}"
    assert [h.legs for h in during.hits[:1]] == [("keyword",)] and during.hits[0].chunk.meta.source == "valve.txt"
    assert sum("is not reachable" in n for n in during.notices) == 1, during.notices
    assert not after.keyword_only and after.notices == [] and after.hits[0].legs == ("vector", "keyword")


def test_ingest_with_the_server_down_keeps_the_chunks_to_embed_on_the_next_run(
        tmp_path: Path, fake_ollama: FakeOllama, chroma_server: ChromaServer) -> None:
    docs = write_docs(tmp_path / "docs")
    chroma_server.stop()
    done = ragtui(tmp_path, fake_ollama, chroma_server, "ingest", str(docs), "-c", "later")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert f"the Chroma server at 127.0.0.1:{chroma_server.port} is not reachable" in done.stderr
    assert f"run the ingest again when the Chroma server at 127.0.0.1:{chroma_server.port} answers" in said
    assert "3 indexed, 0 embedded" in said
    assert query_json(tmp_path, fake_ollama, chroma_server, "later")["nodes"][0]["source"] == "valve.txt"

    chroma_server.start()
    again = ragtui(tmp_path, fake_ollama, chroma_server, "ingest", str(docs), "-c", "later")
    assert again.returncode == 0 and "3 embedded" in again.stdout + again.stderr, again.stdout
    result = query_json(tmp_path, fake_ollama, chroma_server, "later")
    assert not result["keyword_only"] and result["notices"] == []


def test_delete_removes_the_vectors_on_the_server_and_waits_for_a_server_that_is_down(
        tmp_path: Path, fake_ollama: FakeOllama, chroma_server: ChromaServer) -> None:
    docs = write_docs(tmp_path / "docs")
    assert ragtui(tmp_path, fake_ollama, chroma_server, "ingest", str(docs), "-c", "gone").returncode == 0
    server: Any = chroma_server.client()
    name = chroma_name("ragtui-gone", MODEL)
    assert server.get_collection(name).count() == len(DOCS)

    chroma_server.stop()
    refused = ragtui(tmp_path, fake_ollama, chroma_server, "collections", "delete", "gone", "--yes")
    assert refused.returncode == 1
    assert "was not deleted" in refused.stderr and "delete it again once the server answers" in refused.stderr
    assert (tmp_path / "data" / "collections" / "gone").is_dir()     # nothing removed: the vectors would be left

    chroma_server.start()
    deleted = ragtui(tmp_path, fake_ollama, chroma_server, "collections", "delete", "gone", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert name not in {c.name for c in chroma_server.client().list_collections()}  # type: ignore[attr-defined]
    assert not (tmp_path / "data" / "collections" / "gone").exists()


def test_two_processes_share_the_server_and_the_data_dir(make_settings: Callable[..., Settings],
                                                         fake_ollama: FakeOllama, chroma_server: ChromaServer,
                                                         tmp_path: Path) -> None:
    """A researcher's long-lived ragtui searches while another's `ragtui ingest` adds to the same collection."""
    settings = make_settings("chunk.size_tokens=64", *chroma_server.settings)
    docs = write_docs(tmp_path / "docs")
    more = write_docs(tmp_path / "more", {"lamp.txt": "An oil lamp burns paraffin drawn up through a cotton wick. "
                                                      * 4})

    async def run() -> list[Any]:
        async with Workspace(settings) as workspace:
            async for _ in workspace.ingest([docs], "shared"):
                pass
            found = [await workspace.retrieve("paraffin wick lamp", ["shared"], mode="vector")]
            other = await asyncio.to_thread(ragtui, tmp_path, fake_ollama, chroma_server,
                                            "ingest", str(more), "-c", "shared")
            assert other.returncode == 0 and "1 embedded" in other.stdout + other.stderr, other.stdout
            found.append(await workspace.retrieve("paraffin wick lamp", ["shared"], mode="vector"))
            return found

    before, after = asyncio.run(run())
    assert "lamp.txt" not in {h.chunk.meta.source for h in before.hits}
    assert after.hits[0].chunk.meta.source == "lamp.txt" and after.notices == []
    seen_before, seen_after = before.meta.collections["shared"].vector, after.meta.collections["shared"].vector
    assert seen_before is not None and seen_after is not None
    assert seen_before.vectors[MODEL] < seen_after.vectors[MODEL] == seen_after.chunks    # no stale cached count


def test_vectors_the_server_lost_are_named_with_the_way_to_put_them_back(
        tmp_path: Path, fake_ollama: FakeOllama, chroma_server: ChromaServer) -> None:
    docs = write_docs(tmp_path / "docs")
    assert ragtui(tmp_path, fake_ollama, chroma_server, "ingest", str(docs), "-c", "lost").returncode == 0
    server: Any = chroma_server.client()
    server.delete_collection(chroma_name("ragtui-lost", MODEL))      # the server's data wiped behind our back

    result = query_json(tmp_path, fake_ollama, chroma_server, "lost")
    assert result["keyword_only"] and result["nodes"][0]["source"] == "valve.txt"
    assert result["notices"] == [
        f"Collection lost: its records say {len(DOCS)} chunks have {MODEL} vectors, but the Chroma server at "
        f"127.0.0.1:{chroma_server.port} holds 0; the others are found by keyword only. Put them back with "
        f"`ragtui collections reembed lost --model {MODEL}`."]

    fixed = ragtui(tmp_path, fake_ollama, chroma_server, "collections", "reembed", "lost", "--model", MODEL)
    assert fixed.returncode == 0, fixed.stderr
    again = query_json(tmp_path, fake_ollama, chroma_server, "lost")
    assert not again["keyword_only"] and again["notices"] == []
    assert again["nodes"][0]["legs"] == ["vector", "keyword"]


def test_hnsw_settings_reach_the_server_collection(tmp_path: Path, fake_ollama: FakeOllama,
                                                   chroma_server: ChromaServer) -> None:
    docs = write_docs(tmp_path / "docs")
    done = ragtui(tmp_path, fake_ollama, chroma_server, "--set", "chroma.hnsw_ef=777", "--set", "chroma.hnsw_m=24",
                  "ingest", str(docs), "-c", "hnsw")
    assert done.returncode == 0, done.stderr
    server: Any = chroma_server.client()
    hnsw = server.get_collection(chroma_name("ragtui-hnsw", MODEL)).configuration_json["hnsw"]
    assert (hnsw["space"], hnsw["ef_search"], hnsw["max_neighbors"]) == ("cosine", 777, 24)

    (docs / "lamp.txt").write_text("An oil lamp burns paraffin drawn up through a cotton wick. " * 4)
    ragtui(tmp_path, fake_ollama, chroma_server, "--set", "chroma.hnsw_ef=64", "ingest", str(docs), "-c", "hnsw")
    hnsw = server.get_collection(chroma_name("ragtui-hnsw", MODEL)).configuration_json["hnsw"]
    assert (hnsw["ef_search"], hnsw["max_neighbors"]) == (64, 24)   # ef follows the setting; M stays as built


@pytest.mark.parametrize("setting", ["chroma.hnsw_ef=0", "chroma.hnsw_ef=4097", "chroma.hnsw_m=1",
                                     "chroma.timeout=0"])
def test_chroma_settings_out_of_range_are_a_config_error(tmp_path: Path, fake_ollama: FakeOllama,
                                                         setting: str) -> None:
    done = cli(tmp_path, fake_ollama.url, "--set", setting, "collections", "list")
    assert done.returncode == 2 and setting.split("=")[0] in done.stderr, done.stderr


def test_a_shared_data_dir_keeps_the_groups_bits_on_every_file_ragtui_replaces(
        tmp_path: Path, fake_ollama: FakeOllama, chroma_server: ChromaServer) -> None:
    """The team set-up (docs/guide.md): a group-writable data dir and umask 002, so that every researcher of the group
    can read the collections and take the ingest lock; the files written through a temporary file (the manifest,
    the vector generation) must not come out private."""
    import os

    docs = write_docs(tmp_path / "docs")
    old = os.umask(0o002)
    try:
        done = ragtui(tmp_path, fake_ollama, chroma_server, "ingest", str(docs), "-c", "team")
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "data" / "collections" / "team"
    modes = {name: (folder / name).stat().st_mode & 0o777 for name in ("collection.json", "chroma.generation",
                                                                        "ingest.lock", "chroma.lock")}
    assert modes == dict.fromkeys(modes, 0o664)
