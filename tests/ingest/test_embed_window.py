"""Embedder-aware splitting: a chunk longer than the embedding model's window (its context length from Ollama's
/api/show, in chars by ragtui.tokens) is embedded as overlapping parts whose vectors are averaged (RAGWeed 2d);
the ingest report counts those chunks and `doctor` warns when the chunk size exceeds the window."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.config import Settings
from ragtui.ingest.embedding import embed_input, mean_normalized, split_long
from ragtui.ingest.report import report_lines
from ragtui.library import CollectionRegistry
from tests.fake_ollama import FakeOllama, Model, hashed_embedding
from tests.ingest.conftest import SMALL, ingest

PROSE = " ".join(f"Step {i}: the flapper valve number {i} seals tank {i} after flush {i}; a worn flapper lets "
                 f"water trickle into bowl {i}." for i in range(12))


def embedded_texts(fake: FakeOllama) -> list[str]:
    out: list[str] = []
    for call in fake.calls("/api/embed"):
        value = call.body.get("input", [])
        out.extend([value] if isinstance(value, str) else value)
    return out


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "tank.txt").write_text(PROSE)
    (root / "note.txt").write_text("Short note.")
    return root


def test_chunks_longer_than_the_window_are_embedded_as_averaged_parts(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama, folder: Path) -> None:
    fake_ollama.add_model(Model("nomic-embed-text", "embed", dim=64, context_length=32))   # 32 x 3.5 = 112 chars
    settings = make_settings(*SMALL)                                                       # 64-token chunks
    report = ingest(settings, [folder])
    assert report.chunks_embedded == report.chunks_indexed > 2
    texts = embedded_texts(fake_ollama)
    assert texts and max(len(t) for t in texts) <= 112
    split, tokens = report.split["nomic-embed-text"]
    assert tokens == 32 and split == report.chunks_indexed - 1          # all but "Short note."
    assert any("chunk(s) longer than nomic-embed-text's window (32 tokens, ~112 chars)" in line and
               f"{split} chunk(s)" in line for line in report_lines(report))

    coll = CollectionRegistry(settings).open("c")
    try:
        chunk = next(c for c in coll.records.chunks_of(["tank.txt"]))
        parts = split_long(embed_input(chunk, True), 112, 28)
        assert len(parts) > 1
        expected = mean_normalized([hashed_embedding(p, 64) for p in parts])
        with coll.vector_access():
            best, score = coll.vectors("nomic-embed-text").query(expected, 1)[0]
        assert best == chunk.id and score == pytest.approx(1.0, abs=1e-5)
    finally:
        coll.close()


def test_a_wide_window_embeds_chunks_whole(make_settings: Callable[..., Settings], fake_ollama: FakeOllama,
                                          folder: Path) -> None:
    report = ingest(make_settings(*SMALL), [folder])                   # the fake says 8192 tokens
    assert report.split == {} and not any("window" in line for line in report_lines(report))
    assert any(len(t) > 112 for t in embedded_texts(fake_ollama))


def test_a_model_that_does_not_say_keeps_ragweeds_30000_chars(make_settings: Callable[..., Settings],
                                                              fake_ollama: FakeOllama, folder: Path) -> None:
    fake_ollama.add_model(Model("nomic-embed-text", "embed", dim=64, context_length=0))
    (folder / "long.txt").write_text(("word " * 7_000).strip() + "\n")   # one 35,000-char paragraph
    report = ingest(make_settings("chunk.size_tokens=10000"), [folder])
    assert report.split == {"nomic-embed-text": (1, None)}
    assert max(len(t) for t in embedded_texts(fake_ollama)) <= 30_000
    assert any("context length unknown, 30,000 chars" in line for line in report_lines(report))


def test_doctor_warns_when_chunks_exceed_the_embedding_window(fake_ollama: FakeOllama, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--config", "/dev/null", "--data-dir", str(tmp_path / "data"),
             "--ollama-host", fake_ollama.url, "--set", "llm.model=chat", "--set", "synonyms.enabled=false"]
    main([*flags, "doctor"])
    assert "embed window nomic-embed-text" in (out := capsys.readouterr().out) and "embedded whole" in out

    fake_ollama.add_model(Model("nomic-embed-text", "embed", dim=64, context_length=256))    # ~896 chars
    main([*flags, "doctor"])
    out = capsys.readouterr().out
    warning = next(line for line in out.splitlines() if "embed window" in line)
    assert warning.startswith("warn") and "nomic-embed-text reads 256 tokens (~896 chars)" in warning
    assert "chunk.size_tokens = 384 (~1,536 chars)" in warning and "at most 224 tokens" in warning
