"""`ragtui page`: the PDF page a saved session's source lies on, written as a PNG with the chunk and the quote
boxed; the boxes read back from the PNG's pixels. PDFs built here with pymupdf, ingested and asked through the
real CLI against the fake Ollama over HTTP."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ragtui.model.chunks import Chunk, ChunkMeta
from ragtui.page_render import CHUNK_COLOUR, MAX_PIXELS, QUOTE_COLOUR, PageError, PagePart, page_parts, render_part
from tests.cli_run import cli, command, run_ragtui
from tests.fake_ollama import FakeOllama, Reply, fenced

FILLER = ("Turbine blades sit in the hot gas path of the engine and are cast from nickel superalloys. "
          "Engineers measure the blade temperature with thermocouples at many stations. ")
BREAK_QUOTE = "The coolant film holds the blade surface below its melting point"
WRAPPED_QUOTE = "thermal barrier coatings reflect the radiant heat of the flame back into the gas"
WRAPPED_TEXT = (f"Ceramic layers protect the vanes. In the first stage the {WRAPPED_QUOTE} stream, which lowers "
                "the metal temperature by a hundred kelvin.")
NARROW = (50, 50, 420, 400)          # a column narrow enough that WRAPPED_QUOTE runs over two lines


def write_pdfs(folder: Path) -> None:
    """coatings.pdf: one page, WRAPPED_QUOTE over two lines; cooling.pdf: two pages labelled 12 and 13, page 13
    opening with BREAK_QUOTE, so a chunk over the break holds text of both."""
    import pymupdf

    with pymupdf.open() as doc:
        doc.new_page().insert_textbox(pymupdf.Rect(*NARROW), WRAPPED_TEXT, fontsize=11)
        doc.save(str(folder / "coatings.pdf"))
    with pymupdf.open() as doc:
        for text in (FILLER * 5, f"{BREAK_QUOTE}. " + FILLER * 5):
            doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 550, 800), text, fontsize=9)
        doc.set_page_labels([{"startpage": 0, "prefix": "", "style": "D", "firstpagenum": 12}])
        doc.save(str(folder / "cooling.pdf"))


def quoting(body: dict[str, Any]) -> Reply:
    """The annotator quotes whichever of the two quotes its extract holds (its first sentence otherwise)."""
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    if "EXTRACT" in text:
        extract = " ".join(fenced(text.split("EXTRACT:", 1)[-1]).split())
        quote = next((q for q in (WRAPPED_QUOTE, BREAK_QUOTE) if q in extract),
                     re.split(r"(?<=[.!?])\s", extract, maxsplit=1)[0])
        return Reply.text(f'"{quote}" This is relevant.')
    return Reply.text("Coatings and the film keep the blade cool [1].")


SETTINGS = ("--set", "retrieve.min_similarity=0", "--set", "keyword.min_query_ic=0")


@pytest.fixture
def asked(tmp_path: Path, fake_ollama: FakeOllama) -> dict[str, Any]:
    """The `ask --json` output of a session over both PDFs and a text file."""
    folder = tmp_path / "papers"
    folder.mkdir()
    write_pdfs(folder)
    (folder / "notes.txt").write_text("Turbine blade coatings and coolant film notes.", encoding="utf-8")
    assert cli(tmp_path, fake_ollama.url, *SETTINGS, "ingest", str(folder), "-c", "papers").returncode == 0
    fake_ollama.responder = quoting
    done = cli(tmp_path, fake_ollama.url, *SETTINGS, "ask", "thermal barrier coatings coolant film blade", "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def page(tmp_path: Path, fake: FakeOllama, *args: str) -> Any:
    return cli(tmp_path, fake.url, *SETTINGS, "page", *args)


def ring_has(pix: Any, rect: Any, colour: tuple[int, int, int], reach: int) -> dict[str, bool]:
    """Whether `colour` is among the pixels just above, below, left and right of `rect` (pixels), within
    `reach` of it."""
    x0, y0, x1, y1 = int(rect.x0), int(rect.y0), int(rect.x1), int(rect.y1)

    def any_in(xs: range, ys: range) -> bool:
        return any(tuple(pix.pixel(x, y)) == colour for x in xs for y in ys
                   if 0 <= x < pix.width and 0 <= y < pix.height)

    return {"above": any_in(range(x0, x1), range(y0 - reach, y0)),
            "below": any_in(range(x0, x1), range(y1, y1 + reach)),
            "left": any_in(range(x0 - reach, x0), range(y0, y1)),
            "right": any_in(range(x1, x1 + reach), range(y0, y1))}


def test_page_writes_the_png_with_the_quote_boxed_line_by_line(asked: dict[str, Any], tmp_path: Path,
                                                                fake_ollama: FakeOllama) -> None:
    import pymupdf

    source = next(s for s in asked["sources"] if s["source"] == "coatings.pdf" and WRAPPED_QUOTE in s["annotation"])
    out = tmp_path / "out" / "page.png"
    out.parent.mkdir()
    done = page(tmp_path, fake_ollama, "--session", str(asked["session"]), str(source["number"]), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert str(out.resolve()) in done.stdout and "papers/coatings.pdf [p.1]" in done.stdout
    assert "lies on" not in done.stdout and done.stderr == ""
    pix = pymupdf.Pixmap(str(out))
    with pymupdf.open(tmp_path / "papers" / "coatings.pdf") as doc:
        zoom = pix.width / doc[0].rect.width
        lines = [q.rect * zoom for q in doc[0].search_for(WRAPPED_QUOTE, quads=True)]
        text = doc[0].get_text("blocks")[0]
    assert len(lines) == 2
    for line in lines:           # each line of the quote framed in the quote's colour, on all four sides
        assert all(ring_has(pix, line, QUOTE_COLOUR, reach=int(3 * zoom) + 4).values()), line
        inside = (int((line.x0 + line.x1) / 2), int((line.y0 + line.y1) / 2))
        assert tuple(pix.pixel(*inside)) not in (QUOTE_COLOUR, CHUNK_COLOUR)     # the text is not painted over
    paragraph = pymupdf.Rect(text[:4]) * zoom
    assert all(ring_has(pix, paragraph, CHUNK_COLOUR, reach=int(5 * zoom) + 4).values())
    # without --session: the latest session, the same page
    again = tmp_path / "again.png"
    assert page(tmp_path, fake_ollama, str(source["number"]), "-o", str(again)).returncode == 0
    assert again.read_bytes() == out.read_bytes()


def test_a_chunk_over_a_page_break_draws_each_page_with_its_part_boxed(asked: dict[str, Any], tmp_path: Path,
                                                                       fake_ollama: FakeOllama) -> None:
    import pymupdf

    source = next(s for s in asked["sources"] if (s["page"], s["page_last"]) == ("12", "13")
                  and BREAK_QUOTE in s["annotation"])
    number = str(source["number"])
    first, second = tmp_path / "p12.png", tmp_path / "p13.png"
    done = page(tmp_path, fake_ollama, number, "-o", str(first))
    assert done.returncode == 0, done.stderr
    assert "wrote page 12" in done.stdout and "lies on 2 pages" in done.stdout and "--page 2 for page 13" in done.stdout
    assert "the quote is on page 13 (--page 2)" in done.stderr
    done = page(tmp_path, fake_ollama, number, "--page", "2", "-o", str(second))
    assert done.returncode == 0, done.stderr
    assert "wrote page 13" in done.stdout and done.stderr == ""
    colours = {}
    for png in (first, second):
        pix = pymupdf.Pixmap(str(png))
        colours[png.name] = {tuple(pix.pixel(x, y)) for x in range(0, pix.width, 2) for y in range(0, pix.height, 2)}
    assert CHUNK_COLOUR in colours["p12.png"] and QUOTE_COLOUR not in colours["p12.png"]
    assert {CHUNK_COLOUR, QUOTE_COLOUR} <= colours["p13.png"]
    beyond = page(tmp_path, fake_ollama, number, "--page", "3", "-o", str(tmp_path / "p14.png"))
    assert beyond.returncode == 2 and "lies on 2 pages: --page goes from 1 to 2" in beyond.stderr
    assert not (tmp_path / "p14.png").exists()


def test_a_source_that_is_not_a_pdf_is_one_clear_error(asked: dict[str, Any], tmp_path: Path,
                                                       fake_ollama: FakeOllama) -> None:
    source = next(s for s in asked["sources"] if s["source"] == "notes.txt")
    done = page(tmp_path, fake_ollama, str(source["number"]), "-o", str(tmp_path / "notes.png"))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "ragtui: papers/notes.txt is not a PDF (txt): it has no page to draw; its text is in the source viewer "
        "(Enter on the source in `ragtui`)"]
    assert not (tmp_path / "notes.png").exists()
    missing = page(tmp_path, fake_ollama, "99", "-o", str(tmp_path / "x.png"))
    assert missing.returncode == 2 and f"session {asked['session']}:" in missing.stderr


def test_a_pdf_changed_since_the_ingest_is_refused(asked: dict[str, Any], tmp_path: Path,
                                                   fake_ollama: FakeOllama) -> None:
    source = next(s for s in asked["sources"] if s["source"] == "coatings.pdf")
    pdf = tmp_path / "papers" / "coatings.pdf"
    pdf.write_bytes(pdf.read_bytes() + b"\n% appended\n")
    done = page(tmp_path, fake_ollama, str(source["number"]), "-o", str(tmp_path / "x.png"))
    assert done.returncode == 1 and "changed since it was ingested" in done.stderr
    pdf.unlink()
    done = page(tmp_path, fake_ollama, str(source["number"]), "-o", str(tmp_path / "x.png"))
    assert done.returncode == 1 and "the file it was ingested from is gone" in done.stderr


@pytest.mark.skipif(sys.platform == "darwin", reason="the viewer there is `open`, not the fake xdg-open")
def test_open_hands_the_png_to_the_viewer_and_says_why_not_over_ssh(asked: dict[str, Any], tmp_path: Path,
                                                                    fake_ollama: FakeOllama) -> None:
    source = next(s for s in asked["sources"] if s["source"] == "coatings.pdf")
    bin_dir, shown = tmp_path / "bin", tmp_path / "shown.txt"
    bin_dir.mkdir()
    viewer = bin_dir / "xdg-open"
    viewer.write_text(f'#!/bin/sh\nprintf %s "$1" > "{shown}"\n', encoding="utf-8")
    viewer.chmod(0o755)
    out = tmp_path / "page.png"
    argv, env = command(tmp_path, fake_ollama.url, *SETTINGS, "page", str(source["number"]), "-o", str(out), "--open")
    env = {**env, "PATH": f"{bin_dir}:{env.get('PATH', '')}", "DISPLAY": ":0"}
    env.pop("SSH_CONNECTION", None)
    done = run_ragtui(argv, env)
    assert done.returncode == 0 and "handed it to xdg-open" in done.stdout, done.stderr
    deadline = time.monotonic() + 10
    while not (shown.exists() and shown.read_text(encoding="utf-8")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert shown.read_text(encoding="utf-8") == str(out.resolve())
    shown.unlink()
    env = {**env, "SSH_CONNECTION": "10.0.0.2 50000 10.0.0.1 22"}
    env.pop("DISPLAY")
    env.pop("WAYLAND_DISPLAY", None)
    done = run_ragtui(argv, env)
    assert done.returncode == 0 and str(out.resolve()) in done.stdout
    assert f"not opened: this is an SSH session without a display; copy {out.resolve()}" in done.stderr
    time.sleep(0.3)
    assert not shown.exists()


# --- the engine function ---------------------------------------------------------------------------------------

def test_a_quote_over_two_lines_is_two_boxes(tmp_path: Path) -> None:
    import pymupdf

    pdf = tmp_path / "coatings.pdf"
    write_pdfs(tmp_path)
    drawn = render_part(pdf, PagePart(0, "1", WRAPPED_TEXT), WRAPPED_QUOTE)
    assert len(drawn.chunk_boxes) == 1 and len(drawn.quote_boxes) == 2 and drawn.notes == ()
    upper, lower = sorted(drawn.quote_boxes, key=lambda b: b.y0)
    assert upper.y1 <= lower.y1 and upper.y0 < lower.y0
    pix = pymupdf.Pixmap(drawn.png)
    for box in drawn.quote_boxes:             # the frame's corners are the quote's colour
        assert tuple(pix.pixel(box.x0, box.y0)) == QUOTE_COLOUR
        assert tuple(pix.pixel(box.x1 - 1, box.y1 - 1)) == QUOTE_COLOUR
    chunk = drawn.chunk_boxes[0]
    assert chunk.x0 <= min(b.x0 for b in drawn.quote_boxes) and chunk.y1 >= max(b.y1 for b in drawn.quote_boxes)
    # the quote spelled with the page's line break and extra spaces is found the same
    spaced = render_part(pdf, PagePart(0, "1", WRAPPED_TEXT), WRAPPED_QUOTE.replace(" the ", "\n the  "))
    assert spaced.quote_boxes == drawn.quote_boxes


def test_a_chunk_over_two_pages_is_drawn_on_both(tmp_path: Path) -> None:
    write_pdfs(tmp_path)
    first, second = FILLER * 2, f"{BREAK_QUOTE}. " + FILLER
    meta = ChunkMeta(collection="c", source="cooling.pdf", file_hash="", format="pdf", chunk_index=0, char_start=0,
                     char_end=len(first + second), page="12", page_index=0,
                     page_breaks=json.dumps([[len(first), "13", 1]]))
    parts = page_parts(Chunk("x", first + second, meta))
    assert [(p.index, p.label, p.text) for p in parts] == [(0, "12", first), (1, "13", second)]
    drawn = [render_part(tmp_path / "cooling.pdf", part, BREAK_QUOTE) for part in parts]
    assert all(d.chunk_boxes for d in drawn)
    assert drawn[0].quote_boxes == () and drawn[0].notes == ("the quote was not found on page 12",)
    assert len(drawn[1].quote_boxes) == 1 and drawn[1].notes == ()
    # the chunk's part of page 12 is its last lines (FILLER twice of five), not the whole page's text
    assert drawn[0].chunk_boxes[0].y0 > drawn[1].chunk_boxes[0].y0


def test_a_table_chunk_is_found_without_its_cell_bars_and_boxed_once(tmp_path: Path) -> None:
    """The ingest joins a table's cells with " | ", which the page does not have; the rows are one box."""
    import pymupdf

    pdf = tmp_path / "table.pdf"
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_text((50, 60), "Cooling results are in the table below.", fontsize=11)
        for y, row in ((100, ("Alloy", "Melting point", "Density")), (120, ("Inconel 718", "1336 C", "8.19")),
                       (140, ("Rene 41", "1315 C", "8.25"))):
            for x, cell in zip((50, 200, 350), row, strict=True):
                page.insert_text((x, y), cell, fontsize=11)
        page.insert_text((50, 200), "Unrelated closing words of the page.", fontsize=11)
        doc.save(str(pdf))
    rows = "Alloy | Melting point | Density\nInconel 718 | 1336 C | 8.19\nRene 41 | 1315 C | 8.25\n"
    drawn = render_part(pdf, PagePart(0, "1", rows), "1336 C")
    assert len(drawn.chunk_boxes) == 1 and len(drawn.quote_boxes) == 1 and drawn.notes == ()
    (table,), (quote,) = drawn.chunk_boxes, drawn.quote_boxes
    zoom = drawn.zoom
    assert table.y0 < 90 * zoom and 140 * zoom < table.y1 < 190 * zoom       # the rows, not the lines around
    assert table.x0 < quote.x0 and quote.x1 < table.x1 and table.y0 < quote.y0 and quote.y1 < table.y1


def test_an_untrusted_pdf_is_bounded_and_refused_with_one_error(tmp_path: Path) -> None:
    import pymupdf

    huge = tmp_path / "huge.pdf"
    with pymupdf.open() as doc:
        doc.new_page(width=14400, height=14400).insert_text((100, 200), "a poster sized page", fontsize=200)
        doc.save(str(huge))
    drawn = render_part(huge, PagePart(0, "1", "a poster sized page"), "poster", zoom=8.0)
    assert drawn.width * drawn.height <= MAX_PIXELS and drawn.chunk_boxes and drawn.quote_boxes
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 100)
    with pytest.raises(PageError, match=r"cannot open broken\.pdf"):
        render_part(broken, PagePart(0, "1", "text"), "")
    with pytest.raises(PageError, match=r"huge\.pdf has 1 page, not page 9"):
        render_part(huge, PagePart(8, "9", "text"), "")
