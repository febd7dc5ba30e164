"""Only what changed is embedded: a chunk whose heading and text the collection already has a vector for takes it
(an edited file's unchanged chunks, a moved or renamed file, a passage copied into another file), while
`collections reembed` still embeds every chunk again. Through the real CLI; what is embedded is counted as the
texts the fake Ollama receives over HTTP."""

from __future__ import annotations

import json
import random
import sqlite3
import zlib
from pathlib import Path
from typing import Any

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama
from tests.ingest.corpus import pdf

WORDS = ("valve", "gasket", "pressure", "impeller", "casing", "bearing", "shaft", "seal", "flange", "nozzle",
         "turbine", "piston", "crank", "spindle", "rotor", "stator", "coil", "relay", "fuse", "breaker", "duct",
         "filter", "damper", "boiler", "burner", "chimney", "radiator", "thermostat", "sensor", "gauge", "meter",
         "pipe", "elbow", "coupling", "bushing", "washer", "spring", "lever", "hinge", "latch")
SMALL = ("--set", "chunk.size_tokens=64")
EDIT = "The replacement diaphragm of the zircon governor hums quietly beside the cobalt sump."


def manual_pages(pages: int, seed: int = 7) -> list[list[str]]:
    """`pages` pages of eight distinct sentences each (seeded)."""
    rng = random.Random(seed)
    return [[f"Step {p}.{s}: the {' '.join(rng.sample(WORDS, 9))} are checked." for s in range(8)]
            for p in range(pages)]


def write_manual(path: Path, pages: list[list[str]]) -> Path:
    return pdf(path, [" ".join(sentences) for sentences in pages])


def ingest(tmp_path: Path, fake: FakeOllama, folder: Path, *flags: str) -> tuple[list[str], str]:
    """The texts embedded during one `ragtui ingest` of `folder`, and its output."""
    before = len(fake.calls("/api/embed"))
    done = cli(tmp_path, fake.url, *SMALL, "ingest", str(folder), "-c", "c", *flags)
    assert done.returncode == 0, done.stderr
    return embedded_since(fake, before), done.stdout + done.stderr


def embedded_since(fake: FakeOllama, before: int) -> list[str]:
    texts: list[str] = []
    for call in fake.calls("/api/embed")[before:]:
        inputs: Any = call.body.get("input", [])
        texts.extend([inputs] if isinstance(inputs, str) else inputs)
    return texts


def chunk_texts(tmp_path: Path) -> dict[str, str]:
    """{chunk id: text} of the collection's records."""
    db = sqlite3.connect(tmp_path / "data" / "collections" / "c" / "records.sqlite3")
    try:
        return {cid: zlib.decompress(text).decode() for cid, text in db.execute("SELECT id, text FROM chunks")}
    finally:
        db.close()


def vector_hits(tmp_path: Path, fake: FakeOllama, question: str) -> list[dict[str, Any]]:
    done = cli(tmp_path, fake.url, "query", question, "-c", "c", "--mode", "vector", "--json")
    assert done.returncode == 0, done.stderr
    nodes: list[dict[str, Any]] = json.loads(done.stdout)["nodes"]
    return nodes


def test_an_edited_paragraph_re_embeds_only_the_chunks_whose_text_changed(tmp_path: Path,
                                                                          fake_ollama: FakeOllama) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    pages = manual_pages(30)
    write_manual(folder / "manual.pdf", pages)
    first, _ = ingest(tmp_path, fake_ollama, folder)
    before = chunk_texts(tmp_path)
    assert len(first) == len(before) > 100

    pages[15][3] = EDIT
    write_manual(folder / "manual.pdf", pages)
    again, output = ingest(tmp_path, fake_ollama, folder)
    after = chunk_texts(tmp_path)
    changed = set(after.values()) - set(before.values())
    assert changed and len(changed) <= 10                # the window's cuts fall back in step after the edit
    assert len(again) == len(changed)
    assert sorted(t.split("\n", 1)[1] for t in again) == sorted(changed)   # after the "path > heading" prefix
    assert f"({len(after) - len(changed)} with the vector of a chunk of the same text" in output
    top = vector_hits(tmp_path, fake_ollama, "zircon governor diaphragm cobalt sump")[0]
    assert top["source"] == "manual.pdf" and "zircon governor" in top["text"]


def test_a_renamed_file_and_a_copied_passage_embed_nothing_again(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    pages = manual_pages(8)
    write_manual(folder / "manual.pdf", pages)
    first, _ = ingest(tmp_path, fake_ollama, folder)
    assert first

    (folder / "manual.pdf").rename(folder / "guide.pdf")
    moved, output = ingest(tmp_path, fake_ollama, folder, "--sync")
    assert moved == [] and "1 added" in output and "1 removed" in output
    assert {h["source"] for h in vector_hits(tmp_path, fake_ollama, " ".join(pages[2][1].split()[2:7]))} == \
        {"guide.pdf"}

    pages[5][2] = EDIT                                           # an edited copy beside it
    write_manual(folder / "guide-v2.pdf", pages)
    texts_before = set(chunk_texts(tmp_path).values())
    copied, _ = ingest(tmp_path, fake_ollama, folder)
    new = set(chunk_texts(tmp_path).values()) - texts_before
    assert 0 < len(copied) <= 10
    assert sorted(t.split("\n", 1)[1] for t in copied) == sorted(new)    # only chunks no file had before


def test_reembed_still_embeds_every_chunk(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    write_manual(folder / "manual.pdf", manual_pages(6))
    ingest(tmp_path, fake_ollama, folder)
    before = len(fake_ollama.calls("/api/embed"))
    done = cli(tmp_path, fake_ollama.url, *SMALL, "collections", "reembed", "c")
    assert done.returncode == 0, done.stderr
    assert sorted(t.split("\n", 1)[1] for t in embedded_since(fake_ollama, before)) == \
        sorted(chunk_texts(tmp_path).values())
    assert "not embedded again" not in done.stdout
