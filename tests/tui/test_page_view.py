"""The page view: the PDF page a source lies on, drawn in the TUI with its chunk and quote boxed, over a session
asked through the real CLI (PDFs built with pymupdf, the fake Ollama over HTTP) and reopened in the app; the
graphics mode chosen by textual-image's own detection, fed fake terminal replies through a pseudo-terminal."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

from ragtui.model.conversation import SessionSource
from ragtui.page_render import CHUNK_COLOUR, QUOTE_COLOUR
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.page_view import MARGIN, PageView, cropped, fitted
from ragtui.tui.screens.source_viewer import SourceViewer
from ragtui.tui.widgets.sources import SourcesPanel
from tests.test_page_cli import BREAK_QUOTE, WRAPPED_QUOTE, asked  # noqa: F401  (asked: the fixture)
from tests.tui.conftest import main_screen, quiet_app

ROOT = Path(__file__).resolve().parents[2]


def session_source(app: RagtuiApp, source_file: str, quote: str = "") -> SessionSource:
    session = main_screen(app).research.session
    assert session is not None
    return next(s for s in session.sources if s.chunk.meta.source == source_file and quote in s.annotation)


async def reopened(app: RagtuiApp, pilot: Any, session_id: int) -> None:
    research = main_screen(app).research
    await research.reopen(session_id)
    for _ in range(50):
        await pilot.pause()
        if research.session is not None and research.session.sources:
            return
    raise AssertionError("the session did not reopen")


async def page_shown(app: RagtuiApp, pilot: Any) -> PageView:
    """Wait until the page view has drawn its page (the render runs in a thread)."""
    for _ in range(400):
        await pilot.pause()
        screen = app.screen
        if isinstance(screen, PageView) and screen.query("#page-image") and screen.frame is not None:
            await pilot.pause()
            return screen
        await asyncio.sleep(0.02)
    raise AssertionError(f"no page drawn: {app.screen!r}")


def select_source(app: RagtuiApp, number: int) -> None:
    panel = main_screen(app).research.query_one(SourcesPanel)
    panel.show_tab("all")
    table = panel.active_table
    table.focus()
    table.move_cursor(row=table.get_row_index(str(number)), animate=False)


# --- snapshots, half-block mode -----------------------------------------------------------------------------

def _snapshot(asked: dict[str, Any], snapshot_settings: Any, snap_compare: Any, size: tuple[int, int]) -> bool:  # noqa: F811
    app = quiet_app(snapshot_settings("ui.page_graphics=halfblock"))

    async def run_before(pilot: Any) -> None:
        await reopened(pilot.app, pilot, asked["session"])
        main_screen(pilot.app).research.page_view(session_source(pilot.app, "coatings.pdf", WRAPPED_QUOTE))
        await page_shown(pilot.app, pilot)

    return bool(snap_compare(app, terminal_size=size, run_before=run_before))


def test_page_view_quote_boxed_80x24(asked: dict[str, Any], snapshot_settings: Any, snap_compare: Any) -> None:  # noqa: F811
    assert _snapshot(asked, snapshot_settings, snap_compare, (80, 24))


def test_page_view_quote_boxed_200x50(asked: dict[str, Any], snapshot_settings: Any, snap_compare: Any) -> None:  # noqa: F811
    assert _snapshot(asked, snapshot_settings, snap_compare, (200, 50))


# --- behaviour ----------------------------------------------------------------------------------------------

async def test_v_on_a_source_draws_its_page_with_both_boxes_and_zooms_and_pans(
        asked: dict[str, Any], snapshot_settings: Any) -> None:  # noqa: F811
    app = quiet_app(snapshot_settings("ui.page_graphics=halfblock"))
    async with app.run_test(size=(100, 40)) as pilot:
        await reopened(app, pilot, asked["session"])
        source = session_source(app, "coatings.pdf", WRAPPED_QUOTE)
        select_source(app, source.number)
        await pilot.press("v")
        view = await page_shown(app, pilot)
        rendered = view.rendered[0]
        assert len(rendered.quote_boxes) == 2 and rendered.chunk_boxes      # the quote runs over two lines
        assert view.image is not None and view.image[0] == 0
        image = view.image[1]
        line = rendered.quote_boxes[0]
        assert image.getpixel((line.x0, (line.y0 + line.y1) // 2)) == QUOTE_COLOUR
        assert CHUNK_COLOUR in {image.getpixel((b.x0, (b.y0 + b.y1) // 2)) for b in rendered.chunk_boxes}
        boxed = view.frame
        boxes = [*rendered.chunk_boxes, *rendered.quote_boxes]
        assert boxed is not None and boxed.width < 0.8 * rendered.width           # opened zoomed to the boxes
        assert boxed.cx - boxed.width / 2 < min(b.x0 for b in boxes)
        assert max(b.x1 for b in boxes) < boxed.cx + boxed.width / 2
        where = str(view.query_one("#page-where").render())
        assert "page 1" in where and "zoomed to the boxes" in where and "halfblock graphics" in where
        # what the widget is given: the boxed region, the quote's red in it
        shown = view.query_one("#page-image").image                               # type: ignore[attr-defined]
        assert QUOTE_COLOUR in {shown.getpixel((x, y)) for x in range(0, shown.width, 2)
                                for y in range(0, shown.height, 2)}
        await pilot.press("z")
        assert view.frame is not None and view.frame.width >= rendered.width - 1     # the whole page
        assert "whole page" in str(view.query_one("#page-where").render())
        whole = view.frame.width
        await pilot.press("plus")
        assert view.frame.width == pytest.approx(whole / 1.5)
        before = view.frame.cx
        await pilot.press("l")
        assert view.frame.cx > before
        await pilot.press("j")
        assert view.frame.cy > rendered.height / 2
        await pilot.press("minus", "minus")
        assert view.frame.width == pytest.approx(whole * 1.5)
        await pilot.press("escape")
        assert not isinstance(app.screen, PageView)


async def test_a_chunk_over_two_pages_is_navigable(asked: dict[str, Any], snapshot_settings: Any) -> None:  # noqa: F811
    app = quiet_app(snapshot_settings("ui.page_graphics=halfblock"))
    async with app.run_test(size=(100, 40)) as pilot:
        await reopened(app, pilot, asked["session"])
        source = session_source(app, "cooling.pdf", BREAK_QUOTE)
        main_screen(app).research.page_view(source)
        view = await page_shown(app, pilot)
        where = str(view.query_one("#page-where").render())
        assert "page 12 · 1 of the chunk's 2 pages" in where and "the quote was not found on page 12" in where
        assert view.rendered[0].chunk_boxes and not view.rendered[0].quote_boxes
        await pilot.press("right_square_bracket")
        for _ in range(400):
            await pilot.pause()
            if 1 in view.rendered and view.frame is not None:
                break
            await asyncio.sleep(0.02)
        where = str(view.query_one("#page-where").render())
        assert "page 13 · 2 of the chunk's 2 pages" in where and "not found" not in where
        assert view.rendered[1].part.index == 1 and view.rendered[1].chunk_boxes and view.rendered[1].quote_boxes
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert view.at == 1 and "The chunk lies on no more pages that way." in [n.message for n in app.notices]
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert view.at == 0 and "page 12" in str(view.query_one("#page-where").render())


async def test_a_text_file_opens_the_viewer_saying_it_has_no_page(asked: dict[str, Any],  # noqa: F811
                                                                   snapshot_settings: Any) -> None:
    app = quiet_app(snapshot_settings("ui.page_graphics=halfblock"))
    async with app.run_test(size=(100, 40)) as pilot:
        await reopened(app, pilot, asked["session"])
        select_source(app, session_source(app, "notes.txt").number)
        await pilot.press("v")
        for _ in range(100):
            await pilot.pause()
            if isinstance(app.screen, SourceViewer):
                break
        assert isinstance(app.screen, SourceViewer)
        note = str(app.screen.query_one("#viewer-note").render())
        assert "The page view draws PDF pages; notes.txt is a txt file, so here is its text." in note


async def test_v_in_the_source_viewer_and_o_writes_the_full_page(asked: dict[str, Any], snapshot_settings: Any,  # noqa: F811
                                                                  tmp_path: Path) -> None:
    app = quiet_app(snapshot_settings("ui.page_graphics=halfblock"))
    async with app.run_test(size=(100, 40)) as pilot:
        await reopened(app, pilot, asked["session"])
        source = session_source(app, "coatings.pdf", WRAPPED_QUOTE)
        main_screen(app).research.open_source(source)
        for _ in range(100):
            await pilot.pause()
            if isinstance(app.screen, SourceViewer):
                break
        await pilot.press("v")
        view = await page_shown(app, pilot)
        await pilot.press("o")
        written = tmp_path / "data" / "pages" / f"ragtui-session{asked['session']}-source{source.number}-page1.png"
        for _ in range(200):
            await pilot.pause()
            if any(str(written) in n.message for n in app.notices):
                break
            await asyncio.sleep(0.02)
        assert written.read_bytes() == view.rendered[0].png
        assert (f"Wrote page 1 at {view.rendered[0].width}x{view.rendered[0].height} pixels to {written}"
                in [n.message for n in app.notices])


def test_the_frame_fits_boxes_and_crops_with_a_margin_beyond_the_page() -> None:
    from PIL import Image

    frame = fitted((100, 100, 300, 150), aspect=2.0)
    assert (frame.cx, frame.cy, frame.width) == (200, 125, 200)
    tall = fitted((0, 0, 100, 400), aspect=0.5)
    assert tall.width == 200                      # as wide as the height asks
    page = Image.new("RGB", (100, 100), (0, 0, 0))
    part = cropped(page, fitted((50, 50, 150, 150), aspect=1.0), aspect=1.0)     # runs past the page's corner
    assert part.size == (100, 100) and part.getpixel((10, 10)) == (0, 0, 0)
    assert part.getpixel((60, 60)) == MARGIN


# --- detection: textual-image's own questions, answered by a fake terminal --------------------------------------

DA1 = b"\x1b[c"                     # what a Sixel terminal answers with 4 among its attributes
KITTY_QUERY = b"\x1b_G"             # the Kitty graphics query: a terminal that has it answers ...;OK
CELL_QUERY = b"\x1b[16t"            # the cell size in pixels


def detected(setting: str, replies: dict[bytes, bytes]) -> tuple[str, bytes]:
    """`choose(setting)` in a child process whose terminal is a pseudo-terminal this test plays: each query the
    child writes gets the reply `replies` has for it (none: silence, as a terminal without the feature)."""
    code = ("from ragtui.tui.page_graphics import choose, cell_pixels\n"
            f"print('MODE', choose({setting!r}), *cell_pixels(), flush=True)\n")
    pid, fd = pty.fork()
    if pid == 0:                                           # the child: stdin, stdout, stderr are the terminal
        os.chdir(ROOT)
        # 80 x 24 cells, its size in pixels unknown (so the cell size is asked with an escape sequence)
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        os.execv(sys.executable, [sys.executable, "-c", code])
    seen = b""
    answered: set[bytes] = set()
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    break
                if not data:
                    break
                seen += data
            for query, reply in replies.items():
                if query in seen and query not in answered:
                    answered.add(query)
                    os.write(fd, reply)
            if b"MODE" in seen and seen.endswith(b"\n"):
                break
    finally:
        os.waitpid(pid, 0)
        os.close(fd)
    line = next(line for line in seen.decode(errors="replace").splitlines() if "MODE" in line)
    return line.split("MODE", 1)[1].strip(), seen


def test_auto_takes_sixel_when_the_terminal_says_so() -> None:
    mode, seen = detected("auto", {DA1: b"\x1b[?62;4;22c", CELL_QUERY: b"\x1b[6;18;9t"})
    assert DA1 in seen and mode == "sixel 9 18"      # the cell size as the terminal gave it


def test_auto_takes_kitty_graphics_when_the_terminal_answers_its_query() -> None:
    mode, seen = detected("auto", {DA1: b"\x1b[?62;22c", KITTY_QUERY: b"\x1b_Gi=1;OK\x1b\\",
                                   CELL_QUERY: b"\x1b[6;18;9t"})
    assert KITTY_QUERY in seen and mode.split()[0] == "kitty"


def test_auto_falls_back_to_half_blocks_in_a_terminal_without_graphics() -> None:
    """tmux over SSH without passthrough: the device attributes without Sixel, no answer to the Kitty query."""
    mode, seen = detected("auto", {DA1: b"\x1b[?1;2c", CELL_QUERY: b"\x1b[6;20;10t"})
    assert DA1 in seen and KITTY_QUERY in seen and mode.split()[0] == "halfblock"


def test_a_mode_set_in_the_config_wins_over_what_the_terminal_answers() -> None:
    mode, _ = detected("halfblock", {DA1: b"\x1b[?62;4;22c", CELL_QUERY: b"\x1b[6;18;9t"})
    assert mode == "halfblock 9 18"


def test_the_setting_is_checked_as_the_settings_load(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ragtui", "--data-dir", str(tmp_path), "--set",
                           "ui.page_graphics=iterm", "config", "show"], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, check=False)
    assert done.returncode == 2 and "ui.page_graphics" in done.stderr
