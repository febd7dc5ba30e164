"""Chunks that keep structure: tables with their caption and header row, code fences, list items.

End to end through the fake Ollama (extraction, chunking, both stores) for each format
that carries tables: markdown, HTML, a PDF with a ruled table, xlsx, csv, xls.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.ingest.chunking import window_chars
from ragtui.ingest.extract import extract
from ragtui.ingest.quality import quality
from ragtui.ingest.structure import parts
from ragtui.library import CollectionRegistry
from ragtui.model.chunks import Chunk
from ragtui.workspace import DocumentView, Workspace
from tests.fake_ollama import FakeOllama
from tests.ingest import corpus
from tests.ingest.conftest import ingest

XLS = Path(__file__).parent / "data" / "gauges.xls"     # made with xlwt 1.3.0: two sheets, a date, numbers
CHARS = window_chars(64, 50)[0]                          # chunk.size_tokens=64 / size_tokens_pdf=64: 256 chars
SIZES = ("chunk.size_tokens=64", "chunk.size_tokens_pdf=64", "embed.backoff_s=0.01")
PROSE = "The pump draws water from the tank and pushes it through the filter. "


@pytest.fixture
def settings(make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> Settings:
    return make_settings(*SIZES)


def chunks_of(settings: Settings, source: str) -> tuple[list[Chunk], str]:
    """The file's chunks in order and its extracted text; each chunk's span is checked against the text."""
    coll = CollectionRegistry(settings).open("c")
    try:
        chunks = sorted((c for c in coll.keyword.get(sorted(coll.keyword.ids())) if c.meta.source == source),
                        key=lambda c: c.meta.chunk_index)
        found = coll.document(source)
    finally:
        coll.close()
    assert found is not None and chunks
    text = found[0]
    for c in chunks:
        assert c.span_text == text[c.meta.char_start:c.meta.char_end]
        assert c.text.startswith(c.text[:c.meta.lead]) and c.text[c.meta.lead:].startswith(c.span_text)
    return chunks, text


def write(tmp_path: Path, name: str, body: str | bytes) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    path = folder / name
    if isinstance(body, bytes):
        path.write_bytes(body)
    else:
        path.write_text(body)
    return folder


def rows_whole_with_header(chunks: list[Chunk], header: str, row: re.Pattern[str]) -> None:
    """Every chunk holding a table row holds the header row too, and every row line in it is whole."""
    for c in chunks:
        lines = c.text.splitlines()
        if any(row.search(line) for line in lines):
            assert header in lines, c.text
        for line in lines:
            if " | " in line or line.startswith("|"):
                assert line == header or row.fullmatch(line.strip()) or set(line) <= set("|-: "), (line, c.text)


def md_table(n: int) -> str:
    return ("Table 1: Gauge ranges\n\n| gauge | range | faults |\n|---|---|---|\n"
            + "".join(f"| gauge {i:02d} | {i}0 bar | none |\n" for i in range(n)))


MD_ROW = re.compile(r"\| gauge \d\d \| \d+ bar \| none \|")


def test_a_markdown_table_that_fits_stays_whole_with_caption_and_header(settings: Settings, tmp_path: Path) -> None:
    table = md_table(4)
    folder = write(tmp_path, "pump.md", "# Pump\n\n" + PROSE * 3 + "\n\n" + table + "\n" + PROSE * 3)
    ingest(settings, [folder])
    chunks, _ = chunks_of(settings, "pump.md")
    assert any(table.strip() in c.text for c in chunks)           # caption, header and rows in one chunk
    rows_whole_with_header(chunks, "| gauge | range | faults |", MD_ROW)


def test_a_long_markdown_table_repeats_caption_and_header_in_each_piece(settings: Settings, tmp_path: Path) -> None:
    folder = write(tmp_path, "pump.md", "# Pump\n\n" + PROSE + "\n\n" + md_table(40) + "\n" + PROSE * 2)
    ingest(settings, [folder])
    chunks, _ = chunks_of(settings, "pump.md")
    pieces = [c for c in chunks if MD_ROW.search(c.text)]
    assert len(pieces) > 3
    lead = "Table 1: Gauge ranges\n\n| gauge | range | faults |\n|---|---|---|\n"
    for c in pieces[1:]:
        assert c.text.startswith(lead) and c.meta.lead == len(lead)
    for c in chunks:
        assert len(c.text) <= CHARS, c.text
    rows_whole_with_header(chunks, "| gauge | range | faults |", MD_ROW)
    seen = {m.group(0) for c in pieces for m in MD_ROW.finditer(c.text)}
    assert len(seen) == 40                                          # no row lost between pieces


CODE = "```python\n" + "".join(f"    value_{i} = compute({i})\n" for i in range(6)) + "```\n"


@pytest.mark.parametrize("strategy", ["window", "markdown"])
def test_a_code_fence_is_never_split(make_settings: Callable[..., Settings], tmp_path: Path, strategy: str) -> None:
    settings = make_settings(*SIZES, f"chunk.strategy={strategy}")
    folder = write(tmp_path, "guide.md", "# Setup\n\n" + PROSE * 2 + "\n\n" + CODE + "\n" + PROSE * 3)
    ingest(settings, [folder])
    chunks, _ = chunks_of(settings, "guide.md")
    assert any(CODE.strip() in c.text for c in chunks)
    for c in chunks:                                                  # no chunk starts or ends inside it
        assert c.text.count("```") in (0, 2), c.text


@pytest.mark.parametrize("strategy", ["window", "markdown"])
def test_a_fence_longer_than_a_chunk_is_split_at_line_ends_and_each_part_refenced(
        make_settings: Callable[..., Settings], tmp_path: Path, strategy: str) -> None:
    settings = make_settings(*SIZES, f"chunk.strategy={strategy}")
    lines = [f"    value_{i} = compute({i}, retries=3)" for i in range(40)]
    folder = write(tmp_path, "guide.md", "# Code\n\n" + PROSE + "\n\n```python\n" + "\n".join(lines)
                   + "\n```\n\n" + PROSE * 2)
    ingest(settings, [folder])
    chunks, _ = chunks_of(settings, "guide.md")
    parts_ = [c for c in chunks if "value_" in c.text]
    assert len(parts_) > 3
    got: list[str] = []
    for c in parts_:
        body = c.text[c.text.index("```python\n") + len("```python\n"):]
        code, closed, _ = body.partition("\n```")
        assert closed, c.text
        assert all(line in lines for line in code.splitlines()), c.text     # whole lines, indentation kept
        got.extend(code.splitlines())
        assert len(c.text) <= CHARS + len("\n```")
    assert sorted(set(got)) == sorted(lines)


def test_list_items_are_never_cut_mid_item(settings: Settings, tmp_path: Path) -> None:
    items = [f"- Step {i}: open valve {i}, wait until the gauge reads {i}0 bar, then close it again."
             for i in range(12)]
    folder = write(tmp_path, "steps.md", "# Steps\n\n" + PROSE + "\n\n" + "\n".join(items) + "\n\n" + PROSE)
    ingest(settings, [folder])
    chunks, _ = chunks_of(settings, "steps.md")
    for c in chunks:
        for line in c.text.splitlines():
            if "- Step" in line or "valve" in line:
                assert line in items, (line, c.text)
    assert {line for c in chunks for line in c.text.splitlines()} >= set(items)
    assert all(b.meta.char_start < a.meta.char_end for a, b in itertools.pairwise(chunks))   # overlap kept


def test_a_wrapped_list_item_goes_on_until_its_sentence_ends() -> None:
    text = ("Steps:\n1. Open valve 1, wait until\nthe gauge settles.\nThe pump draws water.\n"
            "- an item\n  indented more\n\n  a second paragraph under it.\nNot in it.\n")
    items = [text[u.start:u.end] for u in parts(text, CHARS) if u.kind == "item"]
    assert items == ["1. Open valve 1, wait until\nthe gauge settles.\n",
                     "- an item\n  indented more\n\n  a second paragraph under it.\n"]


HTML = """<html><body><div class="sphinxsidebar">Navigation</div><div role="main">
<h1>Gauges</h1><p>{prose}</p><ul><li><p>Step 1: open valve 1</p></li><li>Step 2</li></ul>
<table><caption>Table 2: Gauge ranges</caption>
<thead><tr><th>gauge</th><th>range</th><th>faults</th></tr></thead>
<tbody>{rows}</tbody></table>
<div class="highlight-python notranslate"><div class="highlight"><pre><span class="k">def</span> \
<span class="nf">check</span>(gauge):
    <span class="k">if</span> gauge.reading &gt; 10:
        <span class="k">return</span> <span class="s2">"high"</span>
    <span class="k">return</span> <span class="s2">"ok"</span>
</pre></div></div><p>{prose}</p></div></body></html>"""


def html_page(n: int) -> str:
    rows = "".join(f"<tr>\n<td>gauge {i:02d}</td>\n<td><p>{i}0 bar</p></td><td>none</td></tr>\n" for i in range(n))
    return HTML.format(prose=PROSE * 2, rows=rows)


HTML_ROW = re.compile(r"gauge \d\d \| \d+ bar \| none")


def test_html_table_cells_are_separated_and_the_table_kept_whole(settings: Settings, tmp_path: Path) -> None:
    folder = write(tmp_path, "gauges.html", html_page(3))
    ingest(settings, [folder])
    chunks, text = chunks_of(settings, "gauges.html")
    assert "Table 2: Gauge ranges\ngauge | range | faults\ngauge 00 | 00 bar | none\n" in text
    assert "gaugerangefaults" not in text and "gauge 0000 bar" not in text
    assert any("Table 2: Gauge ranges\ngauge | range | faults\ngauge 00 | 00 bar | none\ngauge 01" in c.text
               and "gauge 02 | 20 bar | none" in c.text for c in chunks)
    rows_whole_with_header(chunks, "gauge | range | faults", HTML_ROW)


def test_html_pre_is_a_fence_with_its_indentation_kept_whole(settings: Settings, tmp_path: Path) -> None:
    folder = write(tmp_path, "gauges.html", html_page(30))
    ingest(settings, [folder])
    chunks, text = chunks_of(settings, "gauges.html")
    code = ('```python\ndef check(gauge):\n    if gauge.reading > 10:\n        return "high"\n'
            '    return "ok"\n```')
    assert code in text and "Navigation" not in text
    assert "\n- Step 1: open valve 1" in text                      # a list item starts with its "- "
    assert any(code in c.text for c in chunks)
    assert all(c.text.count("```") in (0, 2) for c in chunks)
    rows_whole_with_header(chunks, "gauge | range | faults", HTML_ROW)


PDF_ROWS = [["gauge", "range", "faults"]] + [[f"gauge {i:02d}", f"{i}0 bar", "none"] for i in range(30)]


def test_a_ruled_pdf_table_becomes_rows_repeating_the_header(settings: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    corpus.ruled_table_pdf(folder / "manual.pdf", "Table 3: Gauge ranges", PDF_ROWS, prose_after=PROSE * 8)
    ingest(settings, [folder])
    chunks, text = chunks_of(settings, "manual.pdf")
    assert "Table 3: Gauge ranges\ngauge | range | faults\ngauge 00 | 00 bar | none\n" in text
    assert "gauge 29 | 290 bar | none\nCheck every gauge" in text         # the text after the table follows it
    pieces = [c for c in chunks if HTML_ROW.search(c.text)]
    assert len(pieces) > 2
    for c in pieces[1:]:
        assert c.text.startswith("Table 3: Gauge ranges\ngauge | range | faults\n")
    rows_whole_with_header(chunks, "gauge | range | faults", HTML_ROW)
    assert {c.meta.page for c in pieces} == {"1"}
    for c in chunks:                       # a break's offset into the chunk's text is where the next page starts
        for at, label, _ in c.meta.breaks():
            assert label == "2" and c.text[at:].startswith(PROSE[:20])


def test_a_pdf_without_drawings_reads_as_before(tmp_path: Path, settings: Settings) -> None:
    data = corpus.pdf(tmp_path / "p.pdf", [PROSE * 3]).read_bytes()
    doc = extract("p.pdf", data, settings.ingest, tmp_path)[0]
    assert " | " not in getattr(doc, "text", "") and PROSE.strip() in " ".join(getattr(doc, "text", "").split())


def test_xlsx_and_csv_sheets_repeat_their_header_row(settings: Settings, tmp_path: Path) -> None:
    rows = [["Item", "Cost"]] + [[f"Bolt size {i}", f"{i}"] for i in range(60)]
    folder = tmp_path / "docs"
    folder.mkdir()
    corpus.xlsx(folder / "budget.xlsx", rows)
    (folder / "budget.csv").write_text("".join(f"{a},{b}\n" for a, b in rows))
    ingest(settings, [folder])
    row = re.compile(r"Bolt size \d+ \| \d+")
    xlsx, _ = chunks_of(settings, "budget.xlsx")
    assert len(xlsx) > 2 and all(c.text.startswith("## Budget\nItem | Cost\n") for c in xlsx)
    rows_whole_with_header(xlsx, "Item | Cost", row)
    csv, _ = chunks_of(settings, "budget.csv")
    assert len(csv) > 2 and all(c.text.startswith("Item | Cost\n") for c in csv)
    rows_whole_with_header(csv, "Item | Cost", row)


def test_xls_is_read(settings: Settings, tmp_path: Path) -> None:
    folder = write(tmp_path, "gauges.xls", XLS.read_bytes())
    report = ingest(settings, [folder])
    assert report.added == ("gauges.xls",)
    chunks, text = chunks_of(settings, "gauges.xls")
    assert text == ("## Gauges\ngauge | range (bar) | faults | checked\ngauge 00 | 10 | none | 2024-03-01\n"
                    "gauge 01 | 12.5 | leak at seal | 2024-03-02\n## Notes\nCalibrate every gauge yearly.")
    assert chunks[0].meta.format == "xls"


def test_a_corrupt_xls_is_skipped_with_one_reason(settings: Settings, tmp_path: Path) -> None:
    skip = extract("bad.xls", b"\xd0\xcf\x11\xe0 not really a workbook", settings.ingest, tmp_path)[0]
    assert getattr(skip, "reason", "").startswith("corrupt xls: ")
    cut = extract("cut.xls", XLS.read_bytes()[:3000], settings.ingest, tmp_path)[0]
    assert getattr(cut, "reason", "").startswith(("corrupt xls: ", "unreadable xls: "))


def test_an_xls_that_is_a_web_page_export_is_read_as_its_html_table(settings: Settings, tmp_path: Path) -> None:
    """Excel's "save as web page" keeps the .xls name on an HTML file: it is read as the HTML table it is (a row a
    line, cells apart), whether it opens with <html>, with a bare <table>, or with a byte-order mark first."""
    table = ("<table><tr><th>Item</th><th>Cost</th></tr>" + "".join(
        f"<tr><td>Bolt size {i}</td><td>{i}</td></tr>" for i in range(3)) + "</table>")
    page = ('<html xmlns:o="urn:schemas-microsoft-com:office:office" xmlns:x="urn:schemas-microsoft-com:office:excel">'
            f"<head><meta charset=utf-8><title>Budget</title></head><body>{table}</body></html>")
    folder = write(tmp_path, "page.xls", page)
    write(tmp_path, "table.xls", "\n  " + table)
    write(tmp_path, "bom.xls", b"\xef\xbb\xbf" + page.upper().replace("BOLT SIZE", "Bolt size").encode())
    report = ingest(settings, [folder])
    assert sorted(report.added) == ["bom.xls", "page.xls", "table.xls"] and not report.skipped
    for name in report.added:
        chunks, text = chunks_of(settings, name)
        assert re.search(r"(?i)item \| cost\nbolt size 0 \| 0\nbolt size 1 \| 1\nbolt size 2 \| 2", text), text
        assert chunks[0].meta.format == "html"


def test_units_are_bounded_whatever_the_lines() -> None:
    row = "| " + "x" * 600 + " | y |\n"                           # one row longer than a chunk
    text = "| a | b |\n|---|---|\n" + row * 3 + "```\n" + "z" * 900 + "\n```\n"
    for u in parts(text, CHARS):
        assert u.end - u.start + len(u.lead) + len(u.tail) <= CHARS
    assert "".join(text[u.start:u.end] for u in parts(text, CHARS)) == text


def test_collection_quality_counts_chunks_starting_inside_a_table_or_fence() -> None:
    text = md_table(3) + "\n" + PROSE + "\n```\ncode line\n```\n- an item\n  that goes on\n"
    row = text.index("| gauge 01")
    edges = [("md", "", text, 0, 0), ("md", "", text, row, 0), ("md", "", text, row, 30),
             ("md", "", text, text.index("code line"), 0), ("md", "", text, text.index("that goes"), 0)]
    q = quality(edges, [])
    assert (q.cut_block, q.with_lead) == (2, 1)                    # a list item cut is not counted
    assert "  starting inside a table or code fence: 2 (40.0%); repeating a table header or fence line: 1" \
        in q.lines()


def test_a_table_that_lays_out_the_page_keeps_its_blocks_and_headings(settings: Settings, tmp_path: Path) -> None:
    page = ("<html><body><table><tr><td><h1>Library</h1><p>Menu</p></td><td><h2>Module utils</h2>"
            f"<p>{PROSE}</p><table><tr><th>name</th><th>kind</th></tr><tr><td>xslAddCall</td><td>function</td>"
            "</tr></table></td></tr></table></body></html>")
    doc = extract("api.html", page.encode(), settings.ingest, tmp_path)[0]
    text = getattr(doc, "text", "")
    assert "Library\n\nMenu\n\nModule utils\n\n" in text and " | Module utils" not in text
    assert "name | kind\nxslAddCall | function" in text            # the data table inside it keeps its rows
    assert [path for _, path in getattr(doc, "headings", [])] == ["Library", "Library > Module utils"]


def test_tildes_and_backticks_fence_code_only_in_markdown_and_html(settings: Settings, tmp_path: Path) -> None:
    news = "Release 3.17\n~~~~~~~~~~~~\n" + PROSE * 10 + "\nRelease 3.16\n~~~~~~~~~~~~\n" + PROSE * 10
    assert {u.kind for u in parts(news, CHARS, fences=True)} == {"fence"}       # as markdown reads it
    assert parts(news, CHARS, fences=False) == []
    folder = write(tmp_path, "NEWS.txt", news)
    ingest(settings, [folder])
    chunks, _ = chunks_of(settings, "NEWS.txt")
    assert all(c.meta.lead == 0 and "```" not in c.text for c in chunks)
    assert quality([("txt", "", news, news.index("Release 3.16"), 0)], []).cut_block == 0


def test_the_document_view_places_a_piece_that_repeats_its_header(settings: Settings, tmp_path: Path) -> None:
    folder = write(tmp_path, "pump.md", "# Pump\n\n" + PROSE + "\n\n" + md_table(40) + "\n" + PROSE * 2)
    ingest(settings, [folder])
    chunks, _ = chunks_of(settings, "pump.md")
    piece = next(c for c in chunks if c.meta.lead)

    async def view() -> DocumentView:
        async with Workspace(settings) as workspace:
            return workspace.document_of(piece)

    doc = asyncio.run(view())
    assert (doc.start, doc.end, doc.note) == (piece.meta.char_start, piece.meta.char_end, "")
    assert (piece.meta.char_start, piece.meta.char_end) in doc.chunks


def test_collection_quality_finds_no_table_in_code_or_json() -> None:
    script = "cat a.log | grep error | sort\ncut -f1 b.tsv | uniq -c | sort -n\nps aux | grep py | wc -l\n"
    assert [u.kind for u in parts(script, CHARS, fences=False)] == ["table"]    # as prose would read it
    second = script.index("cut")
    for fmt in ("code", "json"):
        assert quality([(fmt, "", script, 0, 0), (fmt, "", script, second, 0)], []).cut_block == 0
    assert quality([("txt", "", script, 0, 0), ("txt", "", script, second, 0)], []).cut_block == 1
