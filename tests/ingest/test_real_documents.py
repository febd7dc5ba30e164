"""Ingest of documents shaped like real folders: what is indexed, every chunk edge, heading paths,
what the filters drop and what the report says (issue 11)."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.config import Settings
from ragtui.ingest.chunking import mid_word, window_chars, word_start
from ragtui.ingest.discover import HIDDEN, IGNORED
from ragtui.ingest.entropy import GARBAGE, TOC, toc_ratio
from ragtui.library import CollectionRegistry
from ragtui.model import Chunk
from ragtui.retrieve.keyword_leg import keyword_search
from tests.fake_ollama import FakeOllama
from tests.ingest import real_docs
from tests.ingest.conftest import ingest


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    real_docs.sphinx_page(root / "html")
    real_docs.pdf_manual(root / "manual.pdf")
    (root / "scripts").mkdir()
    for name, text in real_docs.SCRIPTS.items():
        (root / "scripts" / name).write_text(text, encoding="utf-8")
    real_docs.common_files(root)
    real_docs.ignore_cases(root)
    return root


def chunks_by_source(settings: Settings) -> tuple[dict[str, list[Chunk]], dict[str, str]]:
    coll = CollectionRegistry(settings).open("c")
    try:
        out: dict[str, list[Chunk]] = {}
        for c in coll.keyword.get(sorted(coll.keyword.ids())):
            out.setdefault(c.meta.source, []).append(c)
        docs = {s: doc[0] for s in out if (doc := coll.records.document(s)) is not None}
    finally:
        coll.close()
    return {s: sorted(cs, key=lambda c: c.meta.char_start) for s, cs in out.items()}, docs


def search(settings: Settings, query: str) -> list[str]:
    coll = CollectionRegistry(settings).open("c")
    try:
        hits = keyword_search(coll.keyword, query, keyword=settings.keyword, top_k=10, synonyms=None,
                              max_synonyms=0).hits
        return list(dict.fromkeys(c.meta.source for c, _ in hits))
    finally:
        coll.close()


def assert_headings_in_force(text: str, headings: list[tuple[str, str]], chunks: list[Chunk]) -> None:
    """Each chunk carries the heading path of the last heading line at or before its start."""
    at = [(0 if text.startswith(title + "\n") else text.index("\n" + title + "\n") + 1, path)
          for title, path in headings]
    for c in chunks:
        expected = [path for offset, path in at if offset <= c.meta.char_start]
        assert c.meta.heading == (expected[-1] if expected else ""), c


def test_a_real_folder_is_read_right(settings: Settings, folder: Path, fake_ollama: FakeOllama,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    report = ingest(settings, [folder])
    chunks, docs = chunks_by_source(settings)

    # what is indexed, what is counted as left out, what is skipped with a reason
    assert sorted(report.added) == sorted([
        "html/buffer.html", "manual.pdf", *(f"scripts/{n}" for n in real_docs.SCRIPTS),
        "NEWS.gz", "README.md.gz", "copyright", "README.logs"])
    assert report.ignored == {HIDDEN: 2, IGNORED: 7}     # .ragtuiignore, .hidden.txt; drafts/, notes.bak,
    #   node_modules/, package-lock.json, searchindex.js, _static/, _sources/, and no more
    skipped = dict(report.skipped)
    assert skipped["blob"].startswith("unsupported format: no file extension, and not text: binary content")
    assert skipped["bomb.txt.gz"].startswith("zip bomb guard: gzip expands past")
    assert set(skipped) == {"blob", "bomb.txt.gz"}
    lines = report.lines()
    assert "not ingested: 2 hidden, 7 ignore rules (hidden paths and ingest.ignore/.ragtuiignore matches)" in lines
    assert not any("drafts" in ln or "node_modules" in ln for ln in lines)            # counted, not listed

    # the HTML page: main content only, headings as paths
    html = docs["html/buffer.html"]
    assert real_docs.BUFFER_PROSE[0][:60] in html and real_docs.BUFFER_PROSE[5][-40:] in html
    for junk in (real_docs.SIDEBAR, real_docs.FOOTER, "Navigation", "Show Source", "¶", "Python 3.12 documentation"):
        assert junk not in html
    by_heading = {c.meta.heading for c in chunks["html/buffer.html"]}
    assert by_heading == {"Buffer Protocol", "Buffer Protocol > Buffer structure",
                          "Buffer Protocol > Buffer structure > Shape, strides and suboffsets",
                          "Buffer Protocol > Releasing buffers"}
    sections = [("Buffer Protocol", "Buffer Protocol"), ("Buffer structure", "Buffer Protocol > Buffer structure"),
                ("Shape, strides and suboffsets", "Buffer Protocol > Buffer structure > Shape, strides and suboffsets"),
                ("Releasing buffers", "Buffer Protocol > Releasing buffers")]
    assert_headings_in_force(html, sections, chunks["html/buffer.html"])

    # the PDF: ligatures folded, TOC and index pages filtered, outline heading paths
    pdf = chunks["manual.pdf"]
    assert not any(ch in c.text for c in pdf for ch in "ﬁﬂ") and "ﬁ" not in docs["manual.pdf"]
    assert any("A file is read into a buffer" in " ".join(c.text.split()) for c in pdf)
    assert report.filtered[TOC] >= 2                                    # the contents page and the index page
    assert all(toc_ratio(c.text) < 0.6 for c in pdf) and not any("Contents" in c.text for c in pdf)
    assert not any("flow control, 3" in c.text for c in pdf)            # the index page's entries are gone
    assert all(c.meta.heading for c in pdf if c.meta.page in ("2", "3"))
    outline = [("1 Introduction", "1 Introduction"), ("1.1 Getting started", "1 Introduction > 1.1 Getting started"),
               ("2 Buffers and files", "2 Buffers and files"), ("2.1 Flushing", "2 Buffers and files > 2.1 Flushing")]
    assert_headings_in_force(docs["manual.pdf"], outline, pdf)
    assert {c.meta.heading for c in pdf} >= {"1 Introduction", "2 Buffers and files"}
    assert ("manual.pdf", 0) not in [(s, k) for s, k, _ in report.mostly_filtered]

    # every script survives the entropy filter and is found by keyword, CJK words inside runs too
    assert GARBAGE not in report.filtered
    for name in real_docs.SCRIPTS:
        assert chunks[f"scripts/{name}"], name
        assert "".join(real_docs.SCRIPTS[name].split())[:20] in "".join(docs[f"scripts/{name}"].split())
    assert search(settings, "人权")[:1] == ["scripts/zh.txt"]            # a bigram inside a run of Han
    assert search(settings, "尊厳")[:1] == ["scripts/ja.txt"]
    assert search(settings, "достоинстве") == ["scripts/ru.txt"]
    assert search(settings, "αξιοπρέπεια") == ["scripts/el.txt"]
    assert search(settings, "fraternité") == ["scripts/fr.txt"]
    assert "manual.pdf" in search(settings, "file flushes")               # typed "fi" meets the folded "ﬁ"

    # common files: gzip read as the file it wraps, extensionless and unknown names sniffed
    assert "faster flush" in docs["NEWS.gz"] and chunks["NEWS.gz"][0].meta.format == "txt"
    assert chunks["README.md.gz"][0].meta.format == "md"
    assert chunks["README.md.gz"][0].meta.heading == "libbuffer"          # markdown headings, as for .md
    assert "Upstream-Name: libbuffer" in docs["copyright"]
    assert "compressés" in docs["README.logs"]                          # Latin-1 bytes, decoded

    # the collection-quality report says the same, at a glance
    n = sum(len(cs) for cs in chunks.values())
    flags = ["--config", os.devnull, "--data-dir", settings.storage.data_dir,
             "--ollama-host", fake_ollama.url]
    assert main([*flags, "collections", "info", "c"]) == 0
    info = capsys.readouterr().out.splitlines()
    no_heading = sum(not c.meta.heading for cs in chunks.values() for c in cs)
    assert f"quality of {n} chunks:" in info
    assert "  starting mid-word: 0 (0.0%)" in info
    no_pdf_heading = sum(not c.meta.heading for c in pdf)
    assert (f"  empty heading path: {no_heading} ({no_heading / n:.1%}); pdf {no_pdf_heading} of {len(pdf)}, "
            f"html 0 of {len(chunks['html/buffer.html'])}, md 0 of {len(chunks['README.md.gz'])}") in info
    by_type = next(ln for ln in info if ln.startswith("  by file type: "))
    assert f"pdf {len(pdf)} " in by_type and f"html {len(chunks['html/buffer.html'])} " in by_type
    dropped = next(ln for ln in info if ln.startswith("  filtered out: "))
    assert f"{report.filtered[TOC]} {TOC}" in dropped
    assert main([*flags, "collections", "info", "c", "--json"]) == 0
    quality = json.loads(capsys.readouterr().out)["quality"]
    assert (quality["chunks"], quality["mid_word"], quality["filtered"][TOC]) == (n, 0, report.filtered[TOC])

    # every chunk edge of every document: a word (or sentence) start, never inside a word
    for source, cs in chunks.items():
        text = docs[source]
        for c in cs:
            assert text[c.meta.char_start:c.meta.char_end] == c.text
            assert not mid_word(text, c.meta.char_start), (source, text[c.meta.char_start - 10:c.meta.char_start + 10])
            assert word_start(text, c.meta.char_start), (source, c.meta.char_start)
            assert not mid_word(text, c.meta.char_end), (source, c.meta.char_end)


def test_every_chunk_of_a_long_real_document_starts_cleanly(settings: Settings, tmp_path: Path,
                                                             fake_ollama: FakeOllama) -> None:
    """Darwin's chapter, 256-character windows: each start is a sentence start when the overlap has one."""
    darwin = (Path(__file__).parents[2] / "ragtui" / "demo" / "darwin.txt").read_text(encoding="utf-8")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "darwin.txt").write_text(darwin, encoding="utf-8")
    ingest(settings, [tmp_path / "d"])
    chunks, docs = chunks_by_source(settings)
    text, cs = docs["darwin.txt"], chunks["darwin.txt"]
    assert len(cs) > 20
    _, ovl = window_chars(settings.chunk.size_tokens, settings.chunk.overlap_pct)
    sentence_start = re.compile(r"[.!?][\"')\]]*\s+|\n[ \t]*\n\s*")
    clean = 0
    for prev, c in itertools.pairwise(cs):
        start = c.meta.char_start
        assert word_start(text, start) and not mid_word(text, start), text[start - 10:start + 10]
        assert start < prev.meta.char_end                               # windows still overlap
        boundary = prev.meta.char_end + len(text[prev.meta.char_end:]) - len(text[prev.meta.char_end:].lstrip())
        lo = boundary - ovl
        region = [m.end() for m in sentence_start.finditer(text, lo - ovl // 4 - 4, lo + ovl // 2)
                  if max(lo - ovl // 4, prev.meta.char_start + 1) <= m.end() < lo + ovl // 2]
        if region:                                   # a sentence start in reach: the chunk starts at one
            assert start in region, (text[start - 20:start + 20], [text[r:r + 10] for r in region])
            clean += 1
    assert clean >= (len(cs) - 1) // 3


def test_binary_garbage_is_dropped_and_named(make_settings: Callable[..., Settings], tmp_path: Path,
                                             fake_ollama: FakeOllama) -> None:
    """A text file with compressed bytes after its first 64 KiB reads as Latin-1; the garbage chunks
    score ~7.9 bits per byte of that encoding and are dropped, the prose is kept."""
    settings = make_settings("chunk.size_tokens=1024")
    prose = " ".join(real_docs.BUFFER_PROSE) + "\n"
    garbage = zlib.compress(gzip.compress(prose.encode() * 40), 9) + bytes(range(256)) * 8
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "log.txt").write_bytes((prose * 60).encode() + garbage * 3)
    (tmp_path / "d" / "all-garbage.txt").write_bytes(prose.encode() * 50 + garbage * 6)
    report = ingest(settings, [tmp_path / "d"])
    assert report.filtered[GARBAGE] >= 2
    chunks, _ = chunks_by_source(settings)
    for cs in chunks.values():                      # at most the windows that straddle prose and garbage
        assert sum("\x00" in c.text for c in cs) <= 2
    assert any("PyBuffer_Release" in c.text for c in chunks["log.txt"])
    named = {s for s, _, _ in report.mostly_filtered}
    assert "log.txt" not in named                                       # lost a little: counted only


def test_a_collection_built_before_is_rechunked_and_reindexed(settings: Settings, tmp_path: Path,
                                                              fake_ollama: FakeOllama) -> None:
    """An index built with the old analyzer and records with the old chunk signature: the next ingest
    rebuilds the keyword index with the CJK analyzer and re-chunks every file."""
    import sqlite3

    from whoosh import index
    from whoosh.analysis import StemmingAnalyzer
    from whoosh.fields import ID, STORED, TEXT, Schema

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "zh.txt").write_text(real_docs.SCRIPTS["zh.txt"], encoding="utf-8")
    (tmp_path / "d" / "fr.txt").write_text(real_docs.SCRIPTS["fr.txt"], encoding="utf-8")
    ingest(settings, [tmp_path / "d"])
    coll_path = Path(settings.storage.data_dir) / "collections" / "c"
    old = Schema(chunk_id=ID(stored=True, unique=True), source=ID(stored=True),
                 text=TEXT(analyzer=StemmingAnalyzer(), stored=True), meta=STORED)
    index.create_in(str(coll_path / "whoosh"), old)                 # the index as the old release left it
    with sqlite3.connect(coll_path / "records.sqlite3") as db:
        db.execute("UPDATE files SET signature = 'window:64:64:64:50:0.5:7.0:0.6'")
    assert search(settings, "人权") == []

    report = ingest(settings, [tmp_path / "d"])
    assert sorted(report.updated) == ["fr.txt", "zh.txt"] and report.unchanged == 0
    coll = CollectionRegistry(settings).open("c")
    try:
        assert not coll.keyword.outdated
    finally:
        coll.close()
    assert search(settings, "人权") == ["zh.txt"]
    assert ingest(settings, [tmp_path / "d"]).unchanged == 2                 # and then it is settled
