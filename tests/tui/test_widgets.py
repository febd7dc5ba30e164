"""Widget-level tests: the panes fed with engine events, themes, copying, keymap and palette."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from textual.binding import Binding
from textual.content import Content
from textual.style import Style
from textual.widgets import DataTable, TabbedContent
from textual.widgets.markdown import MarkdownBlock

from ragtui.events import AnnotationFailed, AnnotationFinished, AnnotationStarted, SourcesReady, SynthesisFinished
from ragtui.model.conversation import AnnotationState, StopReason, annotated, annotating, annotation_failed
from ragtui.model.retrieval import RetrievalMeta
from ragtui.tui.clipboard import osc52, save_copy
from ragtui.tui.commands import RagtuiCommands
from ragtui.tui.keymap import ACTIONS
from ragtui.tui.screens.new_collection import name_problem
from ragtui.tui.themes import load_themes, shipped_themes_dir
from ragtui.tui.widgets.query import QueryInput
from ragtui.tui.widgets.sources import SourcesPanel
from ragtui.tui.widgets.status import StatusLine
from ragtui.tui.widgets.synthesis import SynthesisView, linkify_citations
from tests.tui.conftest import feed, main_screen, post_events, probed, quiet_app
from tests.tui.scripted import ANSWER, finished_session, make_sources


def test_citations_become_links_only_for_known_sources() -> None:
    text = "A [1], B [2, 3] and C [9]; code `x[0]`."
    out = linkify_citations(text, {1, 2, 3})
    assert "[\\[1\\]](cite:1)" in out
    assert "[\\[2\\]](cite:2)[\\[3\\]](cite:3)" in out
    assert "C [9]" in out


async def test_a_range_and_a_markdown_link_render_as_the_engine_parses_them(snapshot_settings) -> None:
    text = "[2-4]; see [1](http://x)"
    linked = "[\\[2\\]](cite:2)[\\[3\\]](cite:3)[\\[4\\]](cite:4); see [1](http://x)"
    assert linkify_citations(text, {1, 2, 3, 4}) == linked
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, [SourcesReady(tuple(make_sources()), RetrievalMeta()),
                         SynthesisFinished(text, StopReason.STOP, citations=(2, 3, 4))])
        await pilot.pause()
        content = app.query_one("#answer").query_one(MarkdownBlock).render()
        assert isinstance(content, Content) and content.plain == "[2][3][4]; see 1"
        links = [(content.plain[s.start:s.end], s.style.meta.get("@click")) for s in content.spans
                 if isinstance(s.style, Style)]
        assert links == [("[2]", "link('cite:2')"), ("[3]", "link('cite:3')"), ("[4]", "link('cite:4')"),
                         ("1", "link('http://x')")]


def test_osc52_plain_and_wrapped_for_tmux() -> None:
    plain = osc52("héllo", in_tmux=False)
    assert plain == "\x1b]52;c;" + base64.b64encode("héllo".encode()).decode() + "\a"
    wrapped = osc52("héllo", in_tmux=True)
    assert wrapped.startswith("\x1bPtmux;\x1b\x1b]52;c;") and wrapped.endswith("\a\x1b\\")


def test_save_copy_writes_the_text(tmp_path: Path) -> None:
    path = save_copy("answer [1]", tmp_path / "d")
    assert path.read_text(encoding="utf-8") == "answer [1]"


def test_shipped_themes_load_and_bad_files_are_reported(tmp_path: Path) -> None:
    themes, errors = load_themes([shipped_themes_dir()])
    assert {t.name for t in themes} >= {"ragtui-dark", "ragtui-light", "ragtui-basic"}
    assert errors == []
    (tmp_path / "broken.toml").write_text("primary = [", encoding="utf-8")
    (tmp_path / "typo.toml").write_text('primry = "#fff"', encoding="utf-8")
    (tmp_path / "colour.toml").write_text('primary = "not-a-colour"', encoding="utf-8")
    themes, errors = load_themes([tmp_path])
    assert themes == []
    assert len(errors) == 3
    assert any("not valid TOML" in e for e in errors) and any("'primry'" in e for e in errors)


async def test_bad_theme_file_and_unknown_theme_still_start_with_default(snapshot_settings, tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text("name = 'bad'\nprimary = 12", encoding="utf-8")
    app = quiet_app(snapshot_settings("ui.theme=nope"), theme_dirs=[shipped_themes_dir(), tmp_path])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.theme == "ragtui-dark"
        messages = [n.message for n in app.notices]
        assert any("bad.toml" in m for m in messages)
        assert any("'nope' not found" in m for m in messages)


@pytest.mark.parametrize("body", ["name = 5", "name = ['a']", "dark = 'yes'", "text_alpha = true", "accent = 3"])
async def test_a_theme_key_of_the_wrong_type_is_skipped_naming_file_and_key(snapshot_settings, tmp_path: Path,
                                                                           body: str) -> None:
    (tmp_path / "odd.toml").write_text(f"{body}\nprimary = '#ff0000'", encoding="utf-8")
    key = body.split(" =")[0]
    themes, errors = load_themes([tmp_path])
    assert themes == [] and len(errors) == 1 and "odd.toml" in errors[0] and f"'{key}'" in errors[0]
    app = quiet_app(snapshot_settings(), theme_dirs=[shipped_themes_dir(), tmp_path])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.theme == "ragtui-dark" and app.is_running
        assert any("odd.toml" in n.message and f"'{key}'" in n.message for n in app.notices)


async def test_theme_setting_and_switch(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings("ui.theme=ragtui-light"))
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "ragtui-light"
        app.query_one(SourcesPanel).active_table.focus()
        await pilot.press("t")
        assert app.theme != "ragtui-light" and app.theme in app.theme_names


async def test_annotations_move_sources_between_tabs(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(SourcesPanel)
        await feed(app, [SourcesReady(tuple(make_sources()), RetrievalMeta())])
        assert panel.counts() == {"relevant": 5, "filtered": 0, "all": 5}
        await feed(app, finished_session()[2:])
        await pilot.pause()
        assert panel.counts() == {"relevant": 3, "filtered": 2, "all": 5}
        assert app.query_one("#filtered-table", DataTable).row_count == 2
        assert str(app.query_one(TabbedContent).get_tab("filtered").label) == "Filtered 2"
        await post_events(app, [AnnotationStarted(annotating(panel.sources[4]))])
        assert panel.sources[4].state is AnnotationState.RUNNING and panel.running
        await post_events(app, [AnnotationFailed(annotation_failed(panel.sources[4], "HTTP 500"))])
        assert panel.sources[4].state is AnnotationState.FAILED and panel.sources[4].error == "HTTP 500"


async def test_spinner_turns_only_while_a_source_is_annotated(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(SourcesPanel)
        await feed(app, [SourcesReady(tuple(make_sources()), RetrievalMeta())])
        await pilot.pause(0.3)
        assert panel.frame == 0
        await post_events(app, [AnnotationStarted(annotating(panel.sources[1]))])
        await pilot.pause(0.35)
        assert panel.frame >= 2
        await post_events(app, [AnnotationFinished(annotated(panel.sources[1], "On point.", relevant=True, by="chat",
                                                                      prompt=""))])
        stopped = panel.frame
        await pilot.pause(0.3)
        assert panel.frame == stopped


async def test_answer_streams_then_links_citations(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        events = finished_session()
        synthesis = app.query_one(SynthesisView)
        streamed = events[: -2]
        await feed(app, streamed)
        assert synthesis.text == ANSWER + " "  # tokens joined as they came
        await feed(app, events[-2:])
        await pilot.pause()
        assert synthesis.text == ANSWER
        assert "(cite:1)" in synthesis.markdown.source


async def test_length_stop_offers_continue(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(100, 30)) as pilot:
        await feed(app, finished_session(stop_reason="length"))
        await pilot.pause()
        banner = app.query_one("#synthesis-banner")
        assert banner.display and "Press c to continue" in str(banner.render())


async def test_query_recall_with_up_and_down(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        query = app.query_one(QueryInput)
        query.remember("first")
        query.remember("second")
        await pilot.press("up")
        assert query.value == "second"
        await pilot.press("up", "up")
        assert query.value == "first"
        await pilot.press("down", "down")
        assert query.value == ""


async def test_status_line_says_when_ollama_is_down(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(120, 24)) as pilot:
        main_screen(app).research.post_message(probed(app.settings, error="Ollama is not reachable at X"))
        await pilot.pause()
        line = str(app.query_one(StatusLine).render())
        assert "down" in line and "KEYWORD-ONLY" in line
        assert "keyword-only retrieval" in str(app.query_one("#synthesis-banner").render())


async def test_missing_models_are_named_with_the_pull_hint(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(120, 24)) as pilot:
        main_screen(app).research.post_message(probed(app.settings, ("nomic-embed-text:latest",)))
        await pilot.pause()
        assert "ollama pull chat" in str(app.query_one("#synthesis-banner").render())


async def test_models_an_openai_compatible_server_serves_are_not_looked_up_in_ollama(snapshot_settings) -> None:
    """Chat and embeddings served the OpenAI way: Ollama is not asked, not named, and no "not pulled" is said."""
    app = quiet_app(snapshot_settings("llm.provider=openai", "llm.base_url=http://127.0.0.1:9/v1",
                                      "embed.provider=openai", "embed.model=embed-model"))
    async with app.run_test(size=(120, 24)) as pilot:
        main_screen(app).research.post_message(probed(app.settings, served=("chat", "embed-model")))
        await pilot.pause()
        line = str(app.query_one(StatusLine).render())
        assert "● llm+embed 127.0.0.1:9/v1" in line and "ollama" not in line and "not " not in line
        assert "ollama pull" not in str(app.query_one("#synthesis-banner").render())


async def test_collections_toggle_with_space(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(120, 30)) as pilot:
        await feed(app, [])
        screen = main_screen(app)
        assert screen.active == {"demo", "papers"}
        app.query_one("#collections").focus()
        await pilot.press("space")
        assert screen.active == {"papers"}
        assert "papers" in app.query_one(QueryInput).border_title


async def test_no_active_collection_is_said_not_ignored(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"why", "enter")
        assert any("No active collection" in n.message for n in app.notices)
        assert main_screen(app).research.session is None


def test_collection_name_rule() -> None:
    assert name_problem("papers", set()) == ""
    assert "already exists" in name_problem("papers", {"papers"})
    assert name_problem("bad name", set())


async def test_every_action_is_bound_and_in_the_palette(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)):
        homes = {"app": app, "main": main_screen(app)}
        for action in ACTIONS:
            home = homes[action.scope]
            assert action.action in {b.action for b in home.BINDINGS if isinstance(b, Binding)}
            assert hasattr(home, f"action_{action.method}")
        provider = RagtuiCommands(app.screen)
        titles = [str(hit.text) async for hit in provider.discover()]
        assert len(titles) == len(ACTIONS)
        hits = [hit async for hit in provider.search("rescue")]
        best = max(hits, key=lambda hit: hit.score)
        assert "Rescue" in str(best.text)
