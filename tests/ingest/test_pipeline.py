"""The ingest engine end to end through the fake Ollama: incremental, safe, and honest in its report."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.events import FileSkipped, IngestProgress, Notice
from ragtui.ingest.embedding import embed_input
from ragtui.ingest.report import report_lines
from ragtui.library import CollectionRegistry
from tests.collection_builder import whoosh_segments
from tests.fake_ollama import FakeOllama, hashed_embedding
from tests.ingest import corpus
from tests.ingest.conftest import SMALL, ingest, ingest_docs, ingest_events

PROSE = ("Toilets flush water through a trap. The float valve refills the tank after each flush. "
         "A worn flapper lets water leak into the bowl, which wastes water all day. ")


def stores(settings: Settings, name: str = "c") -> tuple[set[str], dict[str, set[str]]]:
    coll = CollectionRegistry(settings).open(name)
    try:
        return coll.keyword.ids(), {m: coll.vectors(m).ids() for m in settings.embed.all_models}
    finally:
        coll.close()


def texts(settings: Settings, name: str = "c") -> list[str]:
    coll = CollectionRegistry(settings).open(name)
    try:
        return [c.text for c in coll.keyword.get(sorted(coll.keyword.ids()))]
    finally:
        coll.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# Plumbing\n\n" + PROSE * 3 + "\n## Valves\n\n" + PROSE * 3)
    (root / "b.txt").write_text(PROSE * 4)
    (root / "sub" / "c.html").write_text(f"<html><script>evil()</script><body><p>{PROSE}</p></body></html>")
    corpus.pdf(root / "d.pdf", [PROSE, "Second page about the float valve. " + PROSE * 2])
    return root


def test_ingest_indexes_every_chunk_in_both_stores(settings: Settings, folder: Path,
                                                   fake_ollama: FakeOllama) -> None:
    report = ingest(settings, [folder], topic="plumbing")
    assert sorted(report.added) == ["a.md", "b.txt", "d.pdf", "sub/c.html"]
    assert not report.skipped and not report.needs_embedding
    keyword, vectors = stores(settings)
    assert len(keyword) == report.chunks_indexed == report.chunks_embedded > 4
    assert vectors["nomic-embed-text"] == keyword
    assert set(report.stage_s) == {"extract", "journal", "index", "merge", "embed", "vectors"}
    stages = next(line for line in report_lines(report) if line.startswith("stages: "))
    assert "extract + chunk" in stages and "keyword index" in stages and "vector writes" in stages
    assert "chunks/s" in stages
    coll = CollectionRegistry(settings).open("c")
    assert len(list(coll.keyword.path.glob("*.bm25_terms.npy"))) == whoosh_segments(coll.keyword)
    info = coll.info()
    assert (info.state, info.files, info.topic, info.models) == ("ready", 4, "plumbing", ("nomic-embed-text",))
    chunks = coll.keyword.get(sorted(keyword))
    pdf = [c for c in chunks if c.meta.source == "d.pdf"]
    assert {c.meta.page for c in pdf} == {"i", "ii"} and all(c.meta.format == "pdf" for c in pdf)
    text, pages = coll.document("d.pdf")
    assert [(label, index) for _, label, index in pages] == [("i", 0), ("ii", 1)]
    assert text[pages[1][0]:].startswith("Second page")
    md = [c for c in chunks if c.meta.source == "a.md"]
    assert {c.meta.heading for c in md} >= {"Plumbing", "Plumbing > Valves"}
    assert all("evil" not in c.text for c in chunks)
    for c in chunks:          # offsets point into the extracted text; entropy and words stamped
        text, pages = coll.document(c.meta.source)
        assert text[c.meta.char_start:c.meta.char_end] == c.text and 3 < c.meta.text_entropy < 6
        assert c.meta.word_count > 0
    coll.close()
    embed_inputs = [t for r in fake_ollama.calls("/api/embed") for t in r.body["input"]]
    assert any(t.startswith("a.md > Plumbing\n") for t in embed_inputs)      # contextual prefix embedded...
    assert not any(c.text.startswith("a.md") for c in chunks)               # ...but never stored


def test_reingest_of_unchanged_folder_embeds_nothing(settings: Settings, folder: Path,
                                                     fake_ollama: FakeOllama) -> None:
    ingest(settings, [folder])
    calls = len(fake_ollama.calls("/api/embed"))
    assert calls > 0
    report = ingest(settings, [folder])
    assert report.unchanged == 4 and not report.added and not report.updated
    assert len(fake_ollama.calls("/api/embed")) == calls


def test_identical_bytes_under_another_path_are_not_embedded_twice(settings: Settings, folder: Path,
                                                                   fake_ollama: FakeOllama) -> None:
    ingest(settings, [folder])
    calls = len(fake_ollama.calls("/api/embed"))
    (folder / "copy.txt").write_bytes((folder / "b.txt").read_bytes())
    report = ingest(settings, [folder])
    assert report.duplicates == (("copy.txt", "b.txt"),)
    assert len(fake_ollama.calls("/api/embed")) == calls


def test_edited_file_leaves_no_stale_chunk(settings: Settings, folder: Path) -> None:
    ingest(settings, [folder])
    before, _ = stores(settings)
    (folder / "b.txt").write_text("Completely new content about solar panels and inverters. " * 3)
    report = ingest(settings, [folder])
    assert report.updated == ("b.txt",)
    keyword, vectors = stores(settings)
    assert vectors["nomic-embed-text"] == keyword
    all_text = " ".join(texts(settings))
    b_chunks = [t for t in texts(settings) if "solar" in t]
    assert b_chunks and "flapper" in all_text                     # other files untouched
    coll = CollectionRegistry(settings).open("c")
    assert all("Toilets" not in c.text for c in coll.keyword.get(sorted(keyword)) if c.meta.source == "b.txt")
    b_now = [c for c in coll.keyword.get(sorted(keyword)) if c.meta.source == "b.txt"]
    stored = coll.vectors("nomic-embed-text").vectors([c.id for c in b_now])
    assert all(stored[c.id] == pytest.approx(hashed_embedding(embed_input(c, True), 64)) for c in b_now)
    coll.close()
    assert len(keyword) < len(before)                             # the shorter file has fewer chunks now


def test_sync_removes_chunks_of_deleted_files(settings: Settings, folder: Path) -> None:
    ingest(settings, [folder])
    (folder / "b.txt").unlink()
    report = ingest(settings, [folder])                           # without --sync nothing is removed
    assert report.removed == ()
    report = ingest(settings, [folder], sync=True)
    assert report.removed == ("b.txt",)
    keyword, vectors = stores(settings)
    assert vectors["nomic-embed-text"] == keyword
    coll = CollectionRegistry(settings).open("c")
    assert "b.txt" not in coll.keyword.sources() and coll.records.file("b.txt") is None
    coll.close()


def test_ollama_down_builds_keyword_index_then_fills_embeddings(make_settings: Callable[..., Settings],
                                                                folder: Path, fake_ollama: FakeOllama) -> None:
    down = make_settings(*SMALL, "ollama.host=http://127.0.0.1:9")
    events, report = ingest_events(down, [folder])
    assert report.needs_embedding and report.chunks_embedded == 0 and len(report.added) == 4
    assert any(isinstance(e, Notice) and "nomic-embed-text" in e.message for e in events)
    keyword, vectors = stores(down)
    assert keyword and not vectors["nomic-embed-text"]
    assert CollectionRegistry(down).open("c").info().state == "needs embeddings"
    up = make_settings(*SMALL)
    report = ingest(up, [folder])
    assert report.unchanged == 4 and report.chunks_embedded == len(keyword) and not report.needs_embedding
    keyword2, vectors2 = stores(up)
    assert keyword2 == keyword == vectors2["nomic-embed-text"]
    assert CollectionRegistry(up).open("c").info().state == "ready"


def test_embed_failures_are_retried(settings: Settings, folder: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.embed_failures = 1
    report = ingest(settings, [folder])
    assert not report.needs_embedding and not report.warnings
    statuses = [r for r in fake_ollama.requests if r.path == "/api/embed"]
    assert len(statuses) >= 2


def test_extra_models_and_a_missing_one(make_settings: Callable[..., Settings], folder: Path,
                                        fake_ollama: FakeOllama) -> None:
    settings = make_settings(*SMALL, 'embed.extra_models=["all-minilm", "mxbai-embed-large"]')
    report = ingest(settings, [folder])
    assert any("ollama pull mxbai-embed-large" in w for w in report.warnings)
    assert report.needs_embedding
    keyword, vectors = stores(settings)
    assert vectors["nomic-embed-text"] == vectors["all-minilm"] == keyword
    assert not vectors["mxbai-embed-large"]
    coll = CollectionRegistry(settings).open("c")
    assert set(coll.models) == {"nomic-embed-text", "all-minilm"}
    assert len(coll.vectors("all-minilm").collection.get(include=["embeddings"], limit=1)["embeddings"][0]) == 32
    coll.close()


def test_long_chunk_is_embedded_in_parts(make_settings: Callable[..., Settings], tmp_path: Path,
                                         fake_ollama: FakeOllama) -> None:
    settings = make_settings("chunk.size_tokens=10000", "embed.contextual_prefix=false")
    text = " ".join(f"word{i % 500}." for i in range(7000))            # ~60k chars, one 40k-char chunk first
    report = ingest_docs(settings, [("long", text)])
    sent = [len(t) for r in fake_ollama.calls("/api/embed") for t in r.body["input"]]
    assert max(sent) == 28_672 and report.chunks_embedded == report.chunks_indexed   # the fake's 8192 tokens x 3.5
    assert report.split["nomic-embed-text"][0] >= 1


def test_ingest_documents_in_memory(settings: Settings, fake_ollama: FakeOllama) -> None:
    docs = [("doc-1", PROSE), ("doc-2", "Solar panels convert light into electricity. " * 5), ("doc-3", PROSE)]
    report = ingest_docs(settings, docs)
    assert report.added == ("doc-1", "doc-2", "doc-3") and not report.duplicates
    keyword, vectors = stores(settings)
    assert keyword == vectors["nomic-embed-text"]
    coll = CollectionRegistry(settings).open("c")
    assert coll.keyword.sources() == {"doc-1", "doc-2", "doc-3"}
    coll.close()
    calls = len(fake_ollama.calls("/api/embed"))
    assert ingest_docs(settings, docs).unchanged == 3
    assert len(fake_ollama.calls("/api/embed")) == calls


def test_entropy_filter_counts_dropped_chunks(settings: Settings, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "toc.txt").write_text("Contents\n" + "".join(f"Chapter {i} ........ {i * 10}\n"
                                                                   for i in range(1, 9)))
    (tmp_path / "d" / "ok.txt").write_text(PROSE)
    report = ingest(settings, [tmp_path / "d"])
    assert report.filtered["table of contents or index"] >= 1
    assert sorted(report.added) == ["ok.txt", "toc.txt"]
    assert [(s, kept) for s, kept, _ in report.mostly_filtered] == [("toc.txt", 0)]      # named, not silent
    assert "  toc.txt: all chunks filtered (1 table of contents or index)" in report_lines(report)


def test_progress_events(settings: Settings, folder: Path) -> None:
    events, _ = ingest_events(settings, [folder])
    progress = [e for e in events if isinstance(e, IngestProgress)]
    assert progress and progress[-1].files_done == progress[-1].files_total == 4
    assert progress[-1].embedded == progress[-1].chunks and progress[-1].eta_s == 0.0


def test_bad_input_corpus(settings: Settings, tmp_path: Path) -> None:
    import zipfile

    root = tmp_path / "bad"
    root.mkdir()
    (root / "good.txt").write_text(PROSE)
    (root / "latin.txt").write_bytes("Le café était fermé à cause de la grève générale. ".encode("latin-1") * 3)
    (root / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(3000))
    corpus.pdf(root / "encrypted.pdf", [PROSE], password="pw")
    (root / "zero.txt").write_bytes(b"")
    (root / "random.txt").write_bytes(os.urandom(5000))
    locked = root / "locked.txt"
    locked.write_text(PROSE.replace("water", "fluid"))
    locked.chmod(0)
    (root / "loop").symlink_to(root / "loop")
    (root / "dangling.txt").symlink_to(root / "nowhere.txt")
    os.mkfifo(root / "pipe.txt")
    (root / "dirlink").symlink_to(root)                      # a folder loop
    with zipfile.ZipFile(root / "slip.zip", "w") as z:
        z.writestr("../../outside.txt", "escape attempt")
        z.writestr("fine.txt", PROSE)
    with zipfile.ZipFile(root / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("zeros.txt", b"0" * 20_000_000)
    before = set(tmp_path.rglob("*"))

    report = ingest(settings, [root])
    skipped = dict(report.skipped)
    expected_in = {"good.txt", "latin.txt", "slip.zip"}
    if os.geteuid() == 0:                                     # root reads a 0o000 file anyway
        expected_in.add("locked.txt")
    else:
        assert skipped["locked.txt"] == "unreadable: Permission denied"
    assert set(report.added) == expected_in
    assert skipped["corrupt.pdf"].startswith("corrupt PDF")
    assert skipped["encrypted.pdf"] == "encrypted PDF: a password is required"
    assert skipped["zero.txt"] == "empty file"
    assert skipped["random.txt"].startswith("binary content")
    assert skipped["loop"] == "symlink loop"
    assert skipped["dangling.txt"] == "broken symlink"
    assert skipped["pipe.txt"].startswith("not a regular file")
    assert skipped["dirlink/"].startswith("symlink loop")
    assert "zip-slip" in skipped["slip.zip/../../outside.txt"]
    assert skipped["bomb.zip"].startswith("zip bomb guard")
    coll = CollectionRegistry(settings).open("c")
    assert coll.keyword.sources() == {"good.txt", "latin.txt", "slip.zip/fine.txt"} | (
        {"locked.txt"} if os.geteuid() == 0 else set())
    assert any("grève" in c.text for c in coll.keyword.get(sorted(coll.keyword.ids())))
    coll.close()
    after = set(tmp_path.rglob("*"))
    assert {p for p in after - before if "data" not in p.relative_to(tmp_path).parts} == set()
    assert not (tmp_path / "outside.txt").exists()
    events = ingest_events(settings, [root])[0]
    assert {e.source for e in events if isinstance(e, FileSkipped)} >= set(skipped) - {"locked.txt"}


def test_changed_chunk_settings_rechunk_unchanged_files(make_settings: Callable[..., Settings], folder: Path) -> None:
    first = ingest(make_settings(*SMALL), [folder])
    settings = make_settings("chunk.size_tokens=128", "embed.backoff_s=0.01")
    report = ingest(settings, [folder])
    assert sorted(report.updated) == sorted(first.added) and report.chunks_indexed < first.chunks_indexed
    keyword, vectors = stores(settings)
    assert keyword == vectors["nomic-embed-text"] and len(keyword) == report.chunks_indexed


def test_duplicate_is_indexed_once_its_original_is_gone(settings: Settings, folder: Path) -> None:
    (folder / "copy.txt").write_bytes((folder / "b.txt").read_bytes())
    assert ingest(settings, [folder]).duplicates == (("copy.txt", "b.txt"),)
    (folder / "b.txt").unlink()
    report = ingest(settings, [folder], sync=True)
    assert report.removed == ("b.txt",) and report.added == ("copy.txt",)
    coll = CollectionRegistry(settings).open("c")
    assert "copy.txt" in coll.keyword.sources() and "b.txt" not in coll.keyword.sources()
    coll.close()


def test_missing_path_is_reported(settings: Settings, tmp_path: Path) -> None:
    report = ingest(settings, [tmp_path / "nope"])
    assert report.skipped == ((str(tmp_path / "nope"), "no such file or folder"),)


def test_queries_while_an_ingest_runs_see_committed_state(settings: Settings, folder: Path,
                                                          fake_ollama: FakeOllama) -> None:
    import asyncio

    from ragtui.workspace import Workspace
    from tests.fake_ollama import hashed_embedding

    fake_ollama.embed_delay = 0.05
    seen: list[tuple[int, int]] = []

    async def run() -> None:
        async with Workspace(settings) as workspace:
            async for event in workspace.ingest([folder], "c"):
                if isinstance(event, IngestProgress) and event.embedded:
                    reader = CollectionRegistry(settings).open("c")      # a separate reader, as the TUI would open
                    stored = len(reader.records.embedded_ids("nomic-embed-text"))
                    with reader.vector_access():                          # as every reader of the vectors does
                        hits = reader.vectors("nomic-embed-text").query(hashed_embedding("flapper", 64), top_k=5)
                    seen.append((reader.keyword.doc_count(), stored, len(hits)))
                    assert reader.state == "ingesting"
                    reader.close()

    asyncio.run(run())
    # progress counts vectors as each embedding call returns; a page of them is stored after: a reader finds
    # what is stored (recorded as embedded), never less, and the last progress comes after the last page
    assert seen and all(n > 0 and (hits > 0 or stored == 0) for n, stored, hits in seen)
    assert seen[-1][1] > 0 and seen[-1][2] > 0


def test_a_second_ingest_into_the_same_collection_is_refused(settings: Settings, folder: Path) -> None:
    import fcntl

    from ragtui.library import LOCK_FILE, CollectionError

    coll = CollectionRegistry(settings).create("c")
    with open(coll.path / LOCK_FILE, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)                      # as a running ingest holds it
        coll.update_manifest(state="ingesting")
        assert coll.state == "ingesting" and coll.ingest_running()
        with pytest.raises(CollectionError, match="another ingest is writing"):
            ingest(settings, [folder])
        with pytest.raises(CollectionError, match="stop it before deleting"):
            CollectionRegistry(settings).delete("c")
    assert coll.state == "interrupted"
    assert sorted(ingest(settings, [folder]).added) == ["a.md", "b.txt", "d.pdf", "sub/c.html"]


def test_markdown_strategy_cuts_code_fences_only_at_line_ends(make_settings: Callable[..., Settings],
                                                              tmp_path: Path) -> None:
    settings = make_settings("chunk.size_tokens=32", "chunk.strategy=markdown", "embed.backoff_s=0.01")
    code = "```python\n" + "".join(f"value_{i} = compute({i})  # step {i}\n" for i in range(12)) + "```\n"
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "guide.md").write_text("# Setup\n\nInstall the pump driver first. " * 3 + "\n## Code\n\n"
                                             + code + "\n# Usage\n\nRun the pump at low speed first.\n")
    ingest(settings, [tmp_path / "d"])
    coll = CollectionRegistry(settings).open("c")
    chunks = coll.keyword.get(sorted(coll.keyword.ids()))
    text, _ = coll.document("guide.md")
    coll.close()
    fence_start = text.index("```python")
    fence_end = text.index("```\n", fence_start + 3) + 4
    assert {c.meta.heading for c in chunks} == {"Setup", "Setup > Code", "Usage"}
    for c in chunks:       # the fence is longer than a chunk: cut only at line ends, each part fenced again
        inside = fence_start < c.meta.char_end < fence_end - 1
        assert not inside or (text[c.meta.char_end] == "\n" and c.text.endswith("\n```")), c.text
    assert all(c.text.startswith("```python") and c.text.endswith("```") for c in chunks if "value_" in c.text
               and c.meta.char_start > fence_start)


def test_oversized_file_is_skipped(make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    settings = make_settings("ingest.max_file_mb=1")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "big.txt").write_text("word " * 300_000)
    report = ingest(settings, [tmp_path / "d"])
    assert report.skipped == (("big.txt", "too large: 1 MiB exceeds ingest.max_file_mb (1)"),)


def test_scanned_pdf_goes_through_the_configured_ocr(make_settings: Callable[..., Settings],
                                                      tmp_path: Path) -> None:
    ocr = tmp_path / "tesseract"
    ocr.write_text("#!/bin/sh\ncat > /dev/null\necho 'Recognised words from the scanned page.'\n")
    ocr.chmod(0o755)
    settings = make_settings(*SMALL, f"ingest.tesseract_bin={ocr}")
    (tmp_path / "d").mkdir()
    corpus.pdf(tmp_path / "d" / "scan.pdf", [""], labels=False)
    report = ingest(settings, [tmp_path / "d"])
    assert report.added == ("scan.pdf",)
    coll = CollectionRegistry(settings).open("c")
    [chunk] = coll.keyword.get(sorted(coll.keyword.ids()))
    coll.close()
    assert chunk.text == "Recognised words from the scanned page." and chunk.meta.page == "1"


def test_same_name_from_another_folder_is_a_clash_not_a_silent_overwrite(settings: Settings, tmp_path: Path) -> None:
    proj_a, proj_b = tmp_path / "projA", tmp_path / "projB"
    for folder, text in ((proj_a, "Turbines convert wind into power."), (proj_b, "Pumps need priming.")):
        folder.mkdir()
        (folder / "README.md").write_text(text)
    ingest(settings, [proj_a])
    report = ingest(settings, [proj_b])
    assert report.updated == () and report.reason_of("README.md").startswith("name clash")
    assert any("Turbines" in t for t in texts(settings))

    moved = tmp_path / "projA-moved"
    proj_a.rename(moved)                    # the old folder is gone: the same file, found at its new place
    (moved / "README.md").write_text("Turbines convert wind into electric power.")
    assert ingest(settings, [moved]).updated == ("README.md",)
