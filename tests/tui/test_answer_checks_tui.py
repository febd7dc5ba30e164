"""The TUI's side of the answer checks, at 80x24: a path-like model id shown by its file name in the status
line and the answer's banner, an answer stopped for repetition (not offered for continue) and an answer that
cites no source, each said in the banner over the answer."""

from __future__ import annotations

import re
from pathlib import Path

from ragtui.events import Event, SessionSaved, SynthesisFinished, SynthesisStarted, SynthesisToken
from ragtui.model.conversation import StopReason
from ragtui.tui.app import RagtuiApp
from ragtui.tui.widgets.status import StatusLine
from ragtui.tui.widgets.synthesis import SynthesisView
from tests.fake_ollama import FakeOllama
from tests.model_habits import LOOP_INTRO, LOOP_PARAGRAPH, as_reply, loops
from tests.tui.conftest import feed, main_screen, quiet_app
from tests.tui.scripted import finished_session
from tests.tui.test_session import ask, ingest, settle, write_corpus

MODEL_PATH = "/models/smollm2/SmolLM2-135M-Instruct-Q8_0.gguf"
UNCITED = "Natural selection keeps the small variations that help. It works slowly, over many generations."


def looped_uncited(model: str) -> list[Event]:
    """The finished session's retrieval and annotations, then an answer with no [N] stopped for repetition."""
    events = [e for e in finished_session()
              if not isinstance(e, SynthesisStarted | SynthesisToken | SynthesisFinished | SessionSaved)]
    return [*events, SynthesisStarted(model, (1, 2, 3)),
            *(SynthesisToken(piece) for piece in re.findall(r"\S+\s*", UNCITED)),
            SynthesisFinished(UNCITED, StopReason.REPETITION), SessionSaved(1)]


def openai_settings(snapshot_settings):
    return snapshot_settings("llm.provider=openai", "llm.base_url=http://127.0.0.1:8000/v1",
                             f"llm.model={MODEL_PATH}")


async def test_the_banner_says_why_the_answer_stopped_and_that_it_cites_nothing(snapshot_settings) -> None:
    app = quiet_app(openai_settings(snapshot_settings))
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, looped_uncited(MODEL_PATH))
        await pilot.pause()
        banner = str(app.query_one("#synthesis-banner").render())
        assert banner.startswith("Stopped: the answer began repeating itself; the repeats were dropped. Not offered "
                                 "for continue (it would loop again)")
        assert "The answer cites no source [N]: nothing in it is tied to a source" in banner
        status = str(app.query_one(StatusLine).render())
        assert "SmolLM2-135M-Instruct-Q8_0" in status and "/models/" not in status and "not pulled" not in status


async def test_a_looping_answer_over_http_is_stopped_and_not_continued(make_settings, fake_ollama: FakeOllama,
                                                                       tmp_path: Path) -> None:
    settings = make_settings()
    await ingest(settings, write_corpus(tmp_path))
    fake_ollama.responder = as_reply(loops)
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await ask(app, pilot)
        session = main_screen(app).research.session
        assert session is not None and session.turn.stop_reason is StopReason.REPETITION
        assert app.query_one(SynthesisView).text == session.answer == LOOP_INTRO + LOOP_PARAGRAPH
        assert "began repeating itself" in str(app.query_one("#synthesis-banner").render())
        asked = len(fake_ollama.calls("/api/chat"))
        await pilot.press("tab", "c")                    # out of the query bar; continue: refused, with the reason
        await settle(app, pilot)
        assert len(fake_ollama.calls("/api/chat")) == asked
        assert any(n.message.startswith("The answer was stopped because it")      # clipped to one line at 80
                   for n in app._notifications)


async def test_a_cited_answer_has_no_citation_banner(snapshot_settings) -> None:
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, finished_session())
        await pilot.pause()
        assert "cites no source" not in str(app.query_one(SynthesisView).query_one("#synthesis-banner").render())


def test_looped_uncited_answer_80x24(snap_compare, snapshot_settings) -> None:
    async def run_before(pilot) -> None:
        await feed(pilot.app, looped_uncited(MODEL_PATH))
        await pilot.pause()

    assert snap_compare(quiet_app(openai_settings(snapshot_settings)), terminal_size=(80, 24), run_before=run_before)


UNQUOTED_REPLY = ("You can read it with `csv.read_csv(path)`:\n```python\nrows = csv.read_csv('data.csv')\n```\n"
                  "This is relevant because it shows how to load the data.")


async def test_a_source_with_no_quote_is_marked_listed_one_place_down_and_its_reply_shown_whole(
        snapshot_settings) -> None:
    from ragtui.events import AnnotationFinished
    from ragtui.model.conversation import annotated
    from ragtui.tui.screens.details import DetailsScreen
    from ragtui.tui.widgets.sources import SourcesPanel

    events = finished_session()
    first = next(i for i, e in enumerate(events) if isinstance(e, AnnotationFinished) and e.source.number == 1)
    source = events[first].source
    events[first] = AnnotationFinished(annotated(source, UNQUOTED_REPLY, relevant=True, by=MODEL_PATH, prompt=""))
    app = quiet_app(snapshot_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, events)
        panel = app.query_one(SourcesPanel)
        table = panel.active_table
        assert [key.value for key in table.rows] == ["2", "1", "3"]          # behind the next quoted one
        assert str(table.get_cell("1", "state")) == "no quote" and str(table.get_cell("2", "state")) == "relevant"
        table.focus()
        table.move_cursor(row=1)
        await pilot.pause()
        assert "no quote from this source" in str(panel.query_one("#source-detail").render())
        await pilot.press("w")
        await pilot.pause()
        assert isinstance(app.screen, DetailsScreen)
        shown = str(app.screen.query_one("#details-text").render())
        assert (f"Annotation by {MODEL_PATH}, as written (it gives no quote that this source holds):\n"
                + UNQUOTED_REPLY) in shown                                # the full id, the reply's lines kept


async def test_the_banner_says_an_answer_is_an_echo_of_the_prompt(make_settings, fake_ollama: FakeOllama,
                                                                   tmp_path: Path) -> None:
    """Over HTTP, a model that writes the prompt's first source header back instead of an answer."""
    from tests.model_habits import echoes_source_header

    settings = make_settings()
    await ingest(settings, write_corpus(tmp_path))
    fake_ollama.responder = as_reply(echoes_source_header)
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await ask(app, pilot)
        session = main_screen(app).research.session
        assert session is not None and session.turn.echo and session.turn.citations == ()
        banner = str(app.query_one("#synthesis-banner").render())
        assert "The answer is mostly text copied from the prompt" in banner
        assert "The answer cites no source [N]" in banner


async def test_c_drops_a_continuation_that_writes_the_last_paragraph_again_and_says_so(
        make_settings, fake_ollama: FakeOllama, tmp_path: Path) -> None:
    """Over HTTP: the answer is cut at llm.max_tokens after two paragraphs; asked to go on, the model writes the
    second again (its lines broken anew, in bold), then new text."""
    from tests.model_habits import NEW_TEXT, PARAGRAPHS, TWO_PARAGRAPHS, repeats_last_paragraph

    settings = make_settings(f"llm.max_tokens={TWO_PARAGRAPHS}")
    await ingest(settings, write_corpus(tmp_path))
    fake_ollama.responder = as_reply(repeats_last_paragraph)
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await ask(app, pilot)
        session = main_screen(app).research.session
        assert session is not None and session.turn.stop_reason is StopReason.LENGTH
        partial = session.answer
        assert partial == PARAGRAPHS.rsplit("\n\n", 1)[0] + "\n\n"
        await pilot.press("tab", "c")
        await settle(app, pilot)
        assert session.answer == app.query_one(SynthesisView).text == partial + NEW_TEXT
        said = [n.message for n in app._notifications]
        assert any(m.startswith("chat began its continuation by wr") for m in said), said        # clipped at 80


async def test_the_banner_names_a_changed_number_and_a_reopened_session_names_it_again(
        make_settings, fake_ollama: FakeOllama, tmp_path: Path) -> None:
    """Over HTTP, a model that restates its sources with one percentage two points off and one figure written
    with a scale word: the banner names the changed one only, live and when the saved session is reopened."""
    from tests.model_habits import changes_a_number
    from tests.test_answer_numbers_and_attribution import AREA, SURVEY

    settings = make_settings()
    folder = tmp_path / "farms"
    folder.mkdir()
    (folder / "survey.md").write_text(SURVEY + "\n")
    (folder / "area.md").write_text(AREA + "\n")
    await ingest(settings, folder)
    fake_ollama.responder = as_reply(changes_a_number)
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await ask(app, pilot, "How much farmland uses drip irrigation?")
        session = main_screen(app).research.session
        assert session is not None and "1.5 million hectares" in session.turn.answer
        survey = next(s.number for s in session.sources if s.chunk.meta.source.endswith("survey.md"))
        expected = f"1 number(s) not in the source cited: 85% in [{survey}], the answer says 87%."
        assert expected in str(app.query_one("#synthesis-banner").render())
        session_id = session.id
    assert session_id is not None
    reopened = RagtuiApp(settings, cursor_blink=False)
    async with reopened.run_test(size=(120, 30)) as pilot:
        research = main_screen(reopened).research
        await settle(reopened, pilot)
        await research.reopen(session_id)
        await settle(reopened, pilot)
        assert expected in str(reopened.query_one("#synthesis-banner").render())
