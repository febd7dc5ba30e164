"""`ragtui demo`: its own data dir and chunk size unless the user chose them; the shipped corpus is usable."""

from __future__ import annotations

from pathlib import Path

from ragtui.cli.demo_cmd import DEMO_CHUNK_TOKENS, demo_settings
from ragtui.config import load_settings
from ragtui.demo import CORPUS


def test_demo_settings_respect_what_the_user_set(tmp_path: Path) -> None:
    plain = demo_settings(load_settings(user_file=tmp_path / "none.toml", env={}))
    assert plain.data_dir.name == "demo" and plain.chunk.size_tokens == DEMO_CHUNK_TOKENS
    chosen = demo_settings(load_settings(user_file=tmp_path / "none.toml", env={"RAGTUI_CHUNK_SIZE_TOKENS": "512"},
                                         overrides=[f"storage.data_dir={tmp_path / 'mine'}"]))
    assert chosen.data_dir == tmp_path / "mine" and chosen.chunk.size_tokens == 512


def test_corpus_has_a_labelled_pdf_and_markdown_with_headings() -> None:
    import pymupdf

    with pymupdf.open(CORPUS / "darwin-origin-of-species.pdf") as doc:
        assert [p.get_label() for p in doc] == ["60", "61", "62"]
        assert "Natural Selection" in doc[1].get_text()
    notes = (CORPUS / "notes" / "reading-sources.md").read_text(encoding="utf-8")
    assert notes.startswith("# ") and "\n## " in notes
    assert not (CORPUS / "README.md").exists()  # the corpus description is not a document to search


async def test_the_demo_shows_its_collection_as_soon_as_its_ingest_ends(make_settings, fake_ollama) -> None:
    from ragtui.demo import COLLECTION
    from ragtui.tui.app import RagtuiApp
    from ragtui.tui.screens.ingest import IngestScreen
    from tests.tui.conftest import main_screen
    from tests.tui.test_session import settle

    app = RagtuiApp(demo_settings(make_settings()), cursor_blink=False, ingest_on_start=(CORPUS, COLLECTION))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, IngestScreen) and app.screen.changed   # still open, showing the report
        main = main_screen(app)
        assert [v.name for v in main.collection_views] == [COLLECTION] and main.active == {COLLECTION}
        assert main.collection_views[0].state == "ready"
        assert "No collections yet" not in str(main.query_one("#collections-note").render())
        assert "No query yet" in str(main.query_one("#source-detail").render())
