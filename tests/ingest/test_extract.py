"""Each format through `extract`, and the sniffing that keeps binary content out."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from ragtui.config import Settings
from ragtui.config_sections import IngestSettings
from ragtui.ingest.decoding import decode_text
from ragtui.ingest.extract import extract, format_of, unsafe_member
from ragtui.ingest.extracted import Extracted, Skip
from tests.ingest import corpus


@pytest.fixture
def cfg(settings: Settings) -> IngestSettings:
    return settings.ingest


def one(source: str, data: bytes, cfg: IngestSettings, tmp_path: Path, path: Path | None = None) -> Extracted:
    out = extract(source, data, cfg, tmp_path / "work", path)
    assert len(out) == 1 and isinstance(out[0], Extracted), out
    return out[0]


def skipped(source: str, data: bytes, cfg: IngestSettings, tmp_path: Path) -> str:
    out = extract(source, data, cfg, tmp_path / "work")
    assert len(out) == 1 and isinstance(out[0], Skip), out
    return out[0].reason


def test_text_formats_and_encodings(cfg: IngestSettings, tmp_path: Path) -> None:
    assert one("a.txt", "héllo\r\nworld".encode(), cfg, tmp_path).text == "héllo\nworld"
    assert one("a.md", b"\xef\xbb\xbf# T\n", cfg, tmp_path).format == "md"
    latin = one("l.txt", "café crème brûlée, déjà vu".encode("latin-1"), cfg, tmp_path)
    assert latin.text == "café crème brûlée, déjà vu"
    assert one("x.py", b"print('hi')\n", cfg, tmp_path).format == "code"
    assert one("notes.rst", b"Title\n=====\n\nBody.\n", cfg, tmp_path).text == "Title\n=====\n\nBody.\n"


def test_binary_content_is_refused(cfg: IngestSettings, tmp_path: Path) -> None:
    import random

    noise = random.Random(7).randbytes(4096)
    assert "binary content" in skipped("noise.txt", noise, cfg, tmp_path)
    assert "binary content" in skipped("ctl.txt", b"abc\x01\x02\x03\x04\x05def" * 20, cfg, tmp_path)
    with pytest.raises(Exception, match="NUL"):
        decode_text(b"text\x00more")


def test_unknown_empty_and_legacy(cfg: IngestSettings, tmp_path: Path) -> None:
    assert one("a.xyz", b"data", cfg, tmp_path).format == "txt"          # unknown extension: sniffed as text
    assert one("Makefile", b"all:", cfg, tmp_path).text == "all:"
    assert skipped("blob", b"\x7fELF\x00\x00", cfg, tmp_path).startswith(
        "unsupported format: no file extension, and not text: binary content")
    assert skipped("pic.png", b"\x89PNG\r\n", cfg, tmp_path) == "unsupported format: .png"   # never sniffed
    assert "legacy Office" in skipped("old.doc", b"\xd0\xcf", cfg, tmp_path)
    assert skipped("empty.txt", b"", cfg, tmp_path) == "empty file"
    assert format_of("a/b.HTM") == "html" and format_of("x.tsv") == "csv" and format_of("song.mp3") == "av"


def test_html_drops_script_and_style(cfg: IngestSettings, tmp_path: Path) -> None:
    html = b"<html><head><title>T</title><style>p{color:red}</style><script>var secret=1;</script></head>" \
           b"<body><h1>Head</h1><p>First &amp; para.</p><div>Second</div><noscript>no</noscript></body></html>"
    text = one("p.html", html, cfg, tmp_path).text
    assert "secret" not in text and "color" not in text and "no\n" not in text
    assert text.split("\n") == ["Head", "", "First & para.", "", "Second"]


def test_svg_json_csv(cfg: IngestSettings, tmp_path: Path) -> None:
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><style>.a{}</style><text>Axis label</text>' \
          b'<g><text>Legend</text></g></svg>'
    assert one("f.svg", svg, cfg, tmp_path).text == "Axis label\nLegend"
    assert "malformed SVG" in skipped("bad.svg", b"<svg><text>", cfg, tmp_path)
    assert one("d.json", b'{"a":[1,2]}', cfg, tmp_path).text == json.dumps({"a": [1, 2]}, indent=2)
    assert "invalid JSON" in skipped("bad.json", b"{nope", cfg, tmp_path)
    assert one("t.csv", b"name,qty\nbolt,3\n", cfg, tmp_path).text == "name | qty\nbolt | 3"
    assert one("t.tsv", b"a\tb\n", cfg, tmp_path).text == "a | b"


def test_office_formats(cfg: IngestSettings, tmp_path: Path) -> None:
    d = corpus.docx(tmp_path / "a.docx", ["Hello docx", "Second paragraph"])
    assert one("a.docx", d.read_bytes(), cfg, tmp_path).text == "Hello docx\nSecond paragraph"
    o = corpus.odt(tmp_path / "a.odt", ["Hello odt"])
    assert one("a.odt", o.read_bytes(), cfg, tmp_path).text == "Hello odt"
    x = corpus.xlsx(tmp_path / "a.xlsx", [["Item", "Cost"], ["Bolts", "12"]])
    assert one("a.xlsx", x.read_bytes(), cfg, tmp_path).text == "## Budget\nItem | Cost\nBolts | 12"
    assert "corrupt docx" in skipped("bad.docx", b"PK not really", cfg, tmp_path)


def test_pdf_pages_labels_and_offsets(cfg: IngestSettings, tmp_path: Path) -> None:
    p = corpus.pdf(tmp_path / "a.pdf", ["First page words.", "Second page words."])
    doc = one("a.pdf", p.read_bytes(), cfg, tmp_path)
    assert doc.kind == "pdf" and [(pg.label, pg.index) for pg in doc.pages] == [("i", 0), ("ii", 1)]
    assert doc.text[doc.pages[1].start:].startswith("Second page")
    plain = corpus.pdf(tmp_path / "b.pdf", ["Only page."], labels=False)
    assert one("b.pdf", plain.read_bytes(), cfg, tmp_path).pages[0].label == "1"


def test_bad_pdfs(cfg: IngestSettings, tmp_path: Path) -> None:
    assert "corrupt PDF" in skipped("c.pdf", b"%PDF-1.4 garbage garbage", cfg, tmp_path)
    enc = corpus.pdf(tmp_path / "e.pdf", ["Secret"], password="pw")
    assert skipped("e.pdf", enc.read_bytes(), cfg, tmp_path) == "encrypted PDF: a password is required"
    blank = corpus.pdf(tmp_path / "blank.pdf", [""], labels=False)
    assert "no text layer" in skipped("blank.pdf", blank.read_bytes(), cfg, tmp_path)


def test_zip_recursion_slip_and_bomb(cfg: IngestSettings, tmp_path: Path) -> None:
    inner = tmp_path / "inner.zip"
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("deep.txt", "deep text")
    outer = tmp_path / "outer.zip"
    with zipfile.ZipFile(outer, "w") as z:
        z.writestr("a.txt", "alpha text")
        z.writestr("../evil.txt", "escape")
        z.writestr("b.bin", "x")
        z.write(inner, "sub/inner.zip")
    out = extract("outer.zip", outer.read_bytes(), cfg, tmp_path / "work")
    docs = {o.source: o.text for o in out if isinstance(o, Extracted)}
    skips = {o.source: o.reason for o in out if isinstance(o, Skip)}
    assert docs == {"outer.zip/a.txt": "alpha text", "outer.zip/sub/inner.zip/deep.txt": "deep text"}
    assert "zip-slip" in skips["outer.zip/../evil.txt"] and "unsupported" in skips["outer.zip/b.bin"]
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("zeros.txt", b"0" * 5_000_000)
    assert "zip bomb guard" in skipped("bomb.zip", bomb.read_bytes(), cfg, tmp_path)
    assert unsafe_member("/etc/passwd") and unsafe_member("a/../../b") and not unsafe_member("a/b..c")


def test_converters_only_when_present(make_settings: object, tmp_path: Path) -> None:
    settings = make_settings("ingest.detex_bin=", "ingest.unrtf_bin=/nonexistent/unrtf")  # type: ignore[operator]
    cfg = settings.ingest
    assert "set ingest.detex_bin" in skipped("a.tex", b"\\section{x}", cfg, tmp_path)
    assert "unrtf not found" in skipped("a.rtf", b"{\\rtf1 x}", cfg, tmp_path)
    assert "audio/video" in skipped("a.mp3", b"ID3", cfg, tmp_path)
    detex = corpus.converter(tmp_path / "detex", "Plain words from TeX")
    unrtf = corpus.converter(tmp_path / "unrtf", "### Translation from RTF performed by UnRTF\n-----\nRTF body")
    whisper = corpus.converter(tmp_path / "whisper", "spoken words")
    settings = make_settings(f"ingest.detex_bin={detex}", f"ingest.unrtf_bin={unrtf}",  # type: ignore[operator]
                             f"ingest.whisper_bin={whisper}", "ingest.whisper_model=m.bin")
    cfg = settings.ingest
    assert one("a.tex", b"\\section{x}", cfg, tmp_path).text == "Plain words from TeX\n"
    assert one("a.rtf", b"{\\rtf1 x}", cfg, tmp_path).text == "RTF body\n"
    av = one("a.wav", b"RIFF", cfg, tmp_path)
    assert (av.kind, av.text) == ("av", "spoken words\n")
    assert not list((tmp_path / "work").iterdir())          # temp input for the converter is cleaned up


def test_malformed_csv_and_office_files_are_skipped_with_a_reason(cfg: IngestSettings, tmp_path: Path) -> None:
    bad_csv = b'a,"unterminated\n' + b"x" * 200_000 + b"\n"
    assert "unreadable csv" in skipped("bad.csv", bad_csv, cfg, tmp_path)
    assert "xlsx" in skipped("bad.xlsx", b"PK\x03\x04 not really a zip", cfg, tmp_path)


def test_one_malformed_file_does_not_stop_the_ingest(settings: Settings, tmp_path: Path) -> None:
    from tests.ingest.conftest import ingest

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a_notes.txt").write_text("Turbines spin in the wind.")
    (folder / "b_bad.csv").write_bytes(b'a,"unterminated\n' + b"x" * 200_000 + b"\n")
    (folder / "c_more.txt").write_text("Pumps need priming.")
    report = ingest(settings, [folder])
    assert sorted(report.added) == ["a_notes.txt", "c_more.txt"]
    assert report.reason_of("b_bad.csv").startswith("unreadable csv")
