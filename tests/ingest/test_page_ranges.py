"""A PDF chunk that runs over a page break is cited by its first and last page, from a real ingest of a PDF built
here with pymupdf, through the fake Ollama over HTTP; the annotation's quote pins the page it is on."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from ragtui.cli import main
from ragtui.model.chunks import Chunk, ChunkMeta
from tests.fake_ollama import FakeOllama, Reply, fenced

FILLER = ("Turbine blades sit in the hot gas path of the engine and are cast from nickel superalloys. "
          "Engineers measure the blade temperature with thermocouples at many stations. ")
QUOTE = "The coolant film holds the blade surface below its melting point"


def write_pdf(path: Path) -> None:
    """Two pages labelled 12 and 13; page 13 opens with QUOTE, so a window over the break holds text of both."""
    import pymupdf

    doc = pymupdf.open()
    for text in (FILLER * 5, f"{QUOTE}. " + FILLER * 5):
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(50, 50, 550, 800), text, fontsize=9)
    doc.set_page_labels([{"startpage": 0, "prefix": "", "style": "D", "firstpagenum": 12}])
    doc.save(str(path))


def flags(tmp_path: Path, fake: FakeOllama) -> list[str]:
    return ["--config", os.devnull, "--data-dir", str(tmp_path / "data"), "--ollama-host", fake.url,
            "--set", "synonyms.enabled=false", "--set", "llm.model=chat", "--set", "retrieve.min_similarity=0"]


def quoting_responder(body: dict[str, Any]) -> Reply:
    """The annotator quotes QUOTE when its extract holds it (the first sentence otherwise); answers cite [1]."""
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    if "EXTRACT" in text:
        extract = " ".join(fenced(text.split("EXTRACT:", 1)[-1]).split())
        quote = QUOTE if QUOTE in extract else re.split(r"(?<=[.!?])\s", extract, maxsplit=1)[0]
        return Reply.text(f'"{quote}" This is relevant.')
    return Reply.text("The film keeps the blade cool [1].")


@pytest.fixture
def ingested(tmp_path: Path, fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    write_pdf(folder / "cooling.pdf")
    assert main([*flags(tmp_path, fake_ollama), "ingest", str(folder), "-c", "papers"]) == 0
    capsys.readouterr()


def test_a_chunk_over_a_page_break_is_cited_as_a_range(ingested: None, tmp_path: Path, fake_ollama: FakeOllama,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama), "query", "coolant film melting point", "--json"]) == 0
    nodes = json.loads(capsys.readouterr().out)["nodes"]
    crossing = [n for n in nodes if n["page"] != n["page_last"]]
    assert crossing, [(n["page"], n["page_last"]) for n in nodes]
    assert all((n["page"], n["page_last"]) == ("12", "13") and n["label"] == "papers/cooling.pdf [pp.12-13]"
               for n in crossing)
    single = [n for n in nodes if n["page"] == n["page_last"]]
    assert all(n["label"] == f"papers/cooling.pdf [p.{n['page']}]" for n in single)
    assert main([*flags(tmp_path, fake_ollama), "query", "coolant film melting point"]) == 0
    assert re.search(r"papers\s+cooling\.pdf\s+12-13\s", capsys.readouterr().out)


def test_the_quote_pins_its_page_in_ask_and_the_export(ingested: None, tmp_path: Path, fake_ollama: FakeOllama,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    fake_ollama.responder = quoting_responder
    assert main([*flags(tmp_path, fake_ollama), "ask", "what does the coolant film do", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    crossing = [s for s in out["sources"] if s["page_last"] != s["page"]]
    assert crossing and all(s["label"].endswith("[pp.12-13]") for s in crossing)
    pinned = [s for s in crossing if QUOTE in s["annotation"]]
    assert pinned and all(s["quote_page"] == "13" for s in pinned)
    # a quote of the first sentence of a chunk that starts on page 12 lies on page 12
    assert all(s["quote_page"] == "12" for s in crossing if QUOTE not in s["annotation"])
    assert main([*flags(tmp_path, fake_ollama), "history", "export", str(out["session"])]) == 0
    text = capsys.readouterr().out
    assert "**papers/cooling.pdf [pp.12-13]**" in text and "(quoted from page 13)" in text


def test_chunks_stored_before_page_ranges_are_cited_by_their_first_page() -> None:
    old = {"collection": "c", "source": "a.pdf", "file_hash": "h", "format": "pdf", "chunk_index": 0,
           "char_start": 0, "char_end": 10, "page": "12", "page_index": 11}
    meta = ChunkMeta.from_dict(old)
    assert (meta.pages, meta.last_page) == ("12", "12")
    assert Chunk("x", "text", meta).label == "c/a.pdf [p.12]"
    damaged = ChunkMeta.from_dict({**old, "page_breaks": "[[5, 13"})
    assert damaged.pages == "12" and damaged.breaks() == []
    spans = ChunkMeta.from_dict({**old, "page_breaks": '[[5, "13", 12]]'})
    assert spans.pages == "12-13" and Chunk("x", "aaaa bbbbb", spans).label == "c/a.pdf [pp.12-13]"
    assert spans.page_of("aaaa bbbbb", lambda part: "b" in part) == "13"
    assert spans.page_of("aaaa bbbbb", lambda part: True) == ""
