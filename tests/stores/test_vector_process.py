"""A large ingest writes an embedded Chroma's vectors, and runs its closing keyword merge, from processes of their
own (stores/vector_process.py, ingest/merging.py): the
vectors land as they would from the ingesting process, the process dies with the ingest (kill -9 included) so
that no orphan writes while the next ingest reads, a killed writer leaves its chunks to embed on the next run, and
the ingesting process's own Chroma reloads what the writer stored. Real processes, files and signals; embeddings
from the fake Ollama over HTTP."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.library import CollectionRegistry
from ragtui.model.chunks import Chunk, ChunkMeta
from tests.cli_run import cli, command
from tests.fake_ollama import FakeOllama
from tests.signals import default_sigint
from tests.stores.test_lean_vectors import chroma_rows

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads processes from /proc")

APART = ("--set", "ingest.vector_process_files=0", "--set", "ingest.workers=0", "--set", "chunk.size_tokens=64")
WORDS = ("valve", "gasket", "pressure", "impeller", "casing", "bearing", "shaft", "seal", "flange", "nozzle",
         "turbine", "piston", "crank", "spindle", "rotor", "stator", "coil", "relay", "fuse", "breaker")


def write_folder(folder: Path, files: int, paragraphs: int = 6) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        text = "\n\n".join(" ".join(WORDS[(f * 7 + p * 3 + w) % len(WORDS)] for w in range(60)) + "."
                           for p in range(paragraphs))
        (folder / f"manual-{f:03d}.txt").write_text(f"Manual {f}.\n\n{text}\n")
    return folder


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def holds_chroma(pid: int) -> bool:
    """Whether process `pid` has chromadb's native library mapped (it opened a Chroma client)."""
    try:
        return "chromadb_rust_bindings" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_ingest(tmp_path: Path, fake: FakeOllama, folder: Path) -> subprocess.Popen[str]:
    argv, env = command(tmp_path, fake.url, *APART, "ingest", str(folder), "-c", "c")
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)


def writer_of(ingest: subprocess.Popen[str], fake: FakeOllama, timeout: float = 60) -> int:
    """The pid of the ingest's vector process, once it has opened Chroma and the first embedding was asked for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and ingest.poll() is None:
        found = [c for c in children(ingest.pid) if holds_chroma(c)]
        if found and fake.calls("/api/embed"):
            return found[0]
        time.sleep(0.05)
    out, err = ingest.communicate(timeout=30) if ingest.poll() is not None else ("", "")
    raise AssertionError(f"no vector process seen under the ingest: {out[-500:]} {err[-2000:]}")


def embedded_state(tmp_path: Path) -> tuple[int, int, str]:
    """(chunks, chunks embedded, state) of collection `c`, from its records and manifest."""
    folder = tmp_path / "data" / "collections" / "c"
    db = sqlite3.connect(f"file:{folder / 'records.sqlite3'}?mode=ro", uri=True)
    try:
        chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        embedded = db.execute("SELECT count(*) FROM embeds").fetchone()[0]
    finally:
        db.close()
    return chunks, embedded, json.loads((folder / "collection.json").read_text())["state"]


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


def assert_next_ingest_completes(tmp_path: Path, fake: FakeOllama, folder: Path) -> None:
    """The same folder ingested again at full speed: every chunk embedded, Chroma holding exactly those."""
    fake.embed_delay = 0.0
    again = cli(tmp_path, fake.url, *APART, "ingest", str(folder), "-c", "c")
    assert again.returncode == 0, again.stderr
    chunks, embedded, state = embedded_state(tmp_path)
    assert chunks == embedded == chroma_rows(tmp_path / "data" / "collections" / "c")["vectors"]
    assert state == "ready"


def test_an_ingest_writes_its_vectors_from_a_process_of_its_own_and_they_are_searched(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    folder = write_folder(tmp_path / "docs", 12)
    fake_ollama.embed_delay = 0.1
    ingest = start_ingest(tmp_path, fake_ollama, folder)
    writer = writer_of(ingest, fake_ollama)
    assert not holds_chroma(ingest.pid)      # the ingesting process never opened Chroma itself
    _, err = ingest.communicate(timeout=120)
    assert ingest.returncode == 0, err
    assert "Traceback" not in err
    assert gone_within(writer, 10)
    chunks, embedded, state = embedded_state(tmp_path)
    assert chunks == embedded == chroma_rows(tmp_path / "data" / "collections" / "c")["vectors"]
    assert embedded > 12 and state == "ready"
    # the closing merge, in a process of its own too, left one segment with its postings file
    whoosh = tmp_path / "data" / "collections" / "c" / "whoosh"
    segments = {p.name.split(".")[0] for p in whoosh.glob("MAIN_*.seg")}
    assert len(segments) == 1 and all((whoosh / f"{s}.bm25_docs.npy").exists() for s in segments)
    found = cli(tmp_path, fake_ollama.url, "query", "Manual 3. " + " ".join(WORDS[21 % 20:][:30]), "-c", "c",
                "--mode", "vector", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["nodes"]


def test_the_vector_process_dies_with_a_killed_ingest_and_the_next_ingest_completes(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    folder = write_folder(tmp_path / "docs", 40)
    fake_ollama.embed_delay = 0.2
    ingest = start_ingest(tmp_path, fake_ollama, folder)
    writer = writer_of(ingest, fake_ollama)
    os.kill(ingest.pid, signal.SIGKILL)
    ingest.communicate(timeout=30)
    assert gone_within(writer, 5), "the vector process outlived the ingest that started it"

    assert_next_ingest_completes(tmp_path, fake_ollama, folder)


def test_a_killed_vector_process_leaves_its_chunks_to_embed_on_the_next_ingest(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    folder = write_folder(tmp_path / "docs", 40)
    fake_ollama.embed_delay = 0.2
    ingest = start_ingest(tmp_path, fake_ollama, folder)
    writer = writer_of(ingest, fake_ollama)
    os.kill(writer, signal.SIGKILL)
    out, err = ingest.communicate(timeout=120)
    assert ingest.returncode == 0, err
    assert "Traceback" not in err
    said = out + err
    assert "the process writing the vectors stopped (it was killed by signal 9)" in said, said[-2000:]
    chunks, embedded, state = embedded_state(tmp_path)
    assert embedded < chunks and state == "needs embeddings"

    assert_next_ingest_completes(tmp_path, fake_ollama, folder)


def test_ctrl_c_stops_the_ingest_and_its_vector_process_without_a_traceback(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    folder = write_folder(tmp_path / "docs", 40)
    fake_ollama.embed_delay = 0.2
    argv, env = command(tmp_path, fake_ollama.url, *APART, "ingest", str(folder), "-c", "c")
    ingest = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: (default_sigint(), os.setpgrp()))
    writer = writer_of(ingest, fake_ollama)
    os.killpg(ingest.pid, signal.SIGINT)          # what a terminal's Ctrl-C sends: the whole process group
    out, err = ingest.communicate(timeout=60)
    assert "Traceback" not in out + err
    assert ingest.returncode != 0
    assert gone_within(writer, 10)


def test_the_ingesting_process_reads_what_its_vector_process_wrote(
        make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    coll = CollectionRegistry(settings).create("c")
    model = settings.embed.model

    def chunks(start: int, count: int) -> list[Chunk]:
        return [Chunk(f"id-{i}", f"text {i}", ChunkMeta("c", f"f{i % 3}.txt", "0" * 64, "txt", i, 0, 8))
                for i in range(start, start + count)]

    def vector(i: int) -> list[float]:
        return [1.0 if d == i % 16 else 0.01 * ((i * 7 + d) % 5) for d in range(16)]

    with coll.vector_access(write=True):
        coll.vectors(model).add(chunks(0, 10), [vector(i) for i in range(10)])
    with coll.vector_access():
        assert coll.vectors(model).count() == 10          # this process's own Chroma holds the index now
    coll.serve_apart()
    try:
        with coll.vector_access(write=True):
            coll.vectors(model).add(chunks(10, 6), [vector(i) for i in range(10, 16)])
        with coll.vector_access():
            store = coll.vectors(model)
            assert store.count() == 16 and store.dimension() == 16
            assert store.query(vector(13), 1)[0][0] == "id-13"
            assert set(store.vectors(["id-2", "id-14", "nope"])) == {"id-2", "id-14"}
    finally:
        coll.end_apart()
    with coll.vector_access():
        store = coll.vectors(model)
        assert store.count() == 16
        assert store.query(vector(13), 1)[0][0] == "id-13"
        assert store.query(vector(14), 3, sources=["f2.txt"])[0][0] == "id-14"
    coll.close()


def test_a_merge_process_that_fails_leaves_the_merge_to_the_ingesting_process_and_says_so(
        tmp_path: Path, make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtui.ingest import merging
    from tests.ingest.conftest import ingest

    def fails(folders: list[Path], parts: int | None = None) -> list[int]:
        raise AssertionError("daemonic processes are not allowed to have children")

    monkeypatch.setattr(merging, "merge_apart", fails)
    settings = make_settings("ingest.vector_process_files=0", "ingest.workers=0", "chunk.size_tokens=64")
    report = ingest(settings, [write_folder(tmp_path / "docs", 6)])
    assert list(report.warnings) == ["the keyword merge's process failed (AssertionError: daemonic processes are not "
                               "allowed to have children); the merge ran in the ingesting process"]
    whoosh = tmp_path / "data" / "collections" / "c" / "whoosh"
    assert len({p.name.split(".")[0] for p in whoosh.glob("MAIN_*.seg")}) == 1
    assert json.loads((whoosh.parent / "collection.json").read_text())["state"] == "ready"
