"""Nothing the TUI renders from documents, file names or models reaches the terminal as a control sequence,
and Rich markup in them is shown as typed, never read.

A document whose name and text hold ESC, CSI, OSC 0 (window title), OSC 52 (clipboard) and Rich markup
(`[bold]`, `[/]`, `[link=...]`) goes through the real engine: ingest (the ingest dialog's progress and skip
lines), retrieval, an annotation and an answer from the fake Ollama that repeat them, the sources pane and
its detail, the synthesis pane, the source viewer, the history list, the details view and the notices. After
each step every character Textual would send for the screen's content is checked: what the compositor
renders is the text of each cell, so a control character there is one the terminal would receive.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragtui.config import Settings
from ragtui.events import Notice
from ragtui.tui.app import RagtuiApp
from ragtui.tui.messages import Research
from ragtui.tui.screens.history import HistoryScreen
from ragtui.tui.screens.ingest import IngestScreen
from ragtui.tui.screens.source_viewer import SourceViewer
from ragtui.tui.widgets.sources import SourcesPanel
from tests.fake_ollama import FakeOllama, Reply
from tests.tui.conftest import handled, main_screen
from tests.tui.test_session import ask, settle

ESCAPES = "\x1b[2J\x1b]0;owned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\x9b31m"
MARKUP = "[bold]loud[/bold] [/] [link=https://evil.example]click[/link] [@click=app.quit]q[/]"
NAME = "pump\x1b]52;c;eA==\x07[b]x[i].md"          # a name holds no "/": open tags only
TEXT = (f"# Pumps {MARKUP}\n\nCentrifugal pumps start at 3 bar once primed. {ESCAPES} They need priming "
        f"first. {MARKUP} The pumps start slowly.\n")
# What a terminal acts on: C0 controls but newline (Textual draws lines itself), DEL, C1 controls, bidi overrides.
ACTIVE = {chr(c) for c in (*range(0x00, 0x0a), *range(0x0b, 0x20), *range(0x7f, 0xa0))} | set("\u202e\u2066")


def screen_text(app: RagtuiApp) -> str:
    """Every character of the screen as Textual would write it (the text of each rendered segment)."""
    update = app.screen._compositor.render_full_update()
    return "\n".join("".join(segment.text for segment in strip) for strip in update.strips)


def assert_inert(app: RagtuiApp, where: str) -> str:
    text = screen_text(app)
    active = sorted({repr(ch) for ch in text if ch in ACTIVE})
    assert not active, f"{where}: {active} would reach the terminal"
    return text


def responder(body: dict) -> Reply:
    prompt = body["messages"][-1]["content"]
    if "EXTRACT:" in prompt:
        return Reply.text(f'"Centrifugal pumps start at 3 bar once primed." {MARKUP} {ESCAPES} relevant')
    return Reply(pieces=["Pumps start ", "at 3 bar [1]. ", MARKUP[:20], MARKUP[20:], " \x1b]52;c;",
                         "ZQ==\x07 ", ESCAPES, " done."])


async def test_hostile_names_documents_and_answers_render_inert_and_literal(
        make_settings: Callable[..., Settings], fake_ollama: FakeOllama, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / NAME).write_text(TEXT)
    (docs / "lunch.md").write_text("The cafeteria serves soup on Mondays and fish on Fridays.\n")
    (docs / f"bin{ESCAPES[:9]}[b].dat").write_bytes(b"\x00\x01\x02binary" * 64)   # skipped, with its name shown
    fake_ollama.responder = responder
    app = RagtuiApp(make_settings("retrieve.max_chunks_per_file=1", "retrieve.min_similarity=0"), cursor_blink=False)
    async with app.run_test(size=(200, 50), notifications=True) as pilot:
        main = main_screen(app)
        await settle(app, pilot)
        await pilot.press("escape", "i")
        await pilot.pause()
        ingest = app.screen
        assert isinstance(ingest, IngestScreen)
        ingest.query_one("#ingest-path").value = str(docs)
        await pilot.press("tab", *"docs", "enter")
        await settle(app, pilot)
        shown = assert_inert(app, "ingest dialog")
        assert "skipped bin\\x1b[2J\\x1b]0;o[b].dat" in shown
        await pilot.press("escape")
        await settle(app, pilot)
        assert main.active == {"docs"}                              # the ingested collection is active

        await ask(app, pilot, "how do pumps start")
        session = main.research.session
        assert session is not None and session.sources and session.answer
        await pilot.press("tab")
        shown = assert_inert(app, "sources, detail and answer")
        assert "[b]x[i].md" in shown                               # the file name, markup and all
        assert "[bold]loud[/bold]" in shown and "[link=https://evil.example]click[/link]" in shown
        assert app.query_one(SourcesPanel).sources

        main.research.post_message(Research.EngineEvent(Notice("warning", f"odd {MARKUP} {ESCAPES} notice")))
        await handled(main.research)
        await pilot.pause(0.2)
        toasts = [str(toast.render()) for toast in app.screen.query("Toast")]
        assert any("odd [bold]loud[/bold]" in toast for toast in toasts), toasts
        assert not {ch for toast in toasts for ch in toast} & ACTIVE
        assert_inert(app, "notice toast")
        await pilot.press("exclamation_mark")
        await pilot.pause()
        assert "odd [bold]loud[/bold]" in assert_inert(app, "notices log")
        await pilot.press("escape")

        await pilot.press("w")
        await pilot.pause()
        assert_inert(app, "details view")
        await pilot.press("escape", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, SourceViewer)
        shown = assert_inert(app, "source viewer")
        assert "[bold]loud[/bold]" in shown and "␛]52;c;" in shown   # ESC shown as its picture, offsets kept
        assert app.screen.query_one("TextArea").selected_text     # the chunk is still selected
        await pilot.press("escape")

        await pilot.press("h")
        await settle(app, pilot)
        assert isinstance(app.screen, HistoryScreen)
        assert_inert(app, "history list")
        await pilot.press("escape")
    assert app.return_code in (0, None)


async def test_a_misquoting_annotation_and_an_unverified_citation_are_marked(snapshot_settings) -> None:
    """An annotation quoting words its chunk lacks is said to be no real quote (sources pane and detail); an
    answer's citation whose quote is not in that source is marked in the answer and named in the banner."""
    from ragtui.events import AnnotationFinished, SynthesisFinished
    from ragtui.model.conversation import StopReason, annotated
    from ragtui.quotes import QuoteCheck
    from ragtui.tui.widgets.synthesis import UNVERIFIED_MARK, SynthesisView
    from tests.tui.conftest import feed, quiet_app
    from tests.tui.scripted import ANSWER, finished_session

    answer = ANSWER.replace("[2]", '"breeders never select anything" [2]')
    events = [e for e in finished_session() if not isinstance(e, SynthesisFinished)]
    first = next(e for e in events if isinstance(e, AnnotationFinished) and e.number == 1).source
    events.insert(-1, AnnotationFinished(annotated(first, '"Selection invents new organs overnight" Relevant.',
                                                   relevant=True, by="chat", prompt="")))
    check = QuoteCheck("breeders never select anything", (2,), (3,), answer.index("[2]"))
    events.insert(-1, SynthesisFinished(answer, StopReason.STOP, citations=(1, 2, 3), quotes=(check,)))
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(200, 50)) as pilot:
        await feed(app, events)
        await pilot.pause()
        panel = app.query_one(SourcesPanel)
        assert panel.annotation_text(panel.sources[1]).startswith("(quote not in this source) ")
        assert not panel.annotation_text(panel.sources[3]).startswith("(quote")
        synthesis = app.query_one(SynthesisView)
        assert ("1 quote(s) not in the source cited (marked in the answer): misattributed to [2], found in [3]"
                in str(app.query_one("#synthesis-banner").render()))
        shown = screen_text(app)
        assert "quote not in this source" in shown and "Selection invents" in shown
        assert synthesis.text == answer and UNVERIFIED_MARK.strip("*") in shown
