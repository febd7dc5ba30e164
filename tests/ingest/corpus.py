"""Builders for test files of every format, written into tmp dirs by the tests."""

from __future__ import annotations

import zipfile
from pathlib import Path

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def docx(path: Path, paragraphs: list[str]) -> Path:
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", f'<w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>')
    return path


def odt(path: Path, paragraphs: list[str]) -> Path:
    ns = 'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" ' \
         'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
    body = "".join(f"<text:p>{p}</text:p>" for p in paragraphs)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("content.xml", f"<office:document-content {ns}><office:body><office:text>{body}"
                                  "</office:text></office:body></office:document-content>")
    return path


def xlsx(path: Path, rows: list[list[str]]) -> Path:
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    strings = sorted({c for r in rows for c in r})
    cells = "".join("<row>" + "".join(f'<c t="s"><v>{strings.index(c)}</v></c>' for c in r) + "</row>"
                    for r in rows)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("xl/workbook.xml", f'<workbook xmlns="{main}" xmlns:r="{rel}"><sheets>'
                                      '<sheet name="Budget" sheetId="1" r:id="rId1"/></sheets></workbook>')
        z.writestr("xl/_rels/workbook.xml.rels",
                   '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                   '<Relationship Id="rId1" Target="worksheets/sheet1.xml"/></Relationships>')
        z.writestr("xl/sharedStrings.xml", f'<sst xmlns="{main}">' + "".join(f"<si><t>{s}</t></si>"
                                                                             for s in strings) + "</sst>")
        z.writestr("xl/worksheets/sheet1.xml", f'<worksheet xmlns="{main}"><sheetData>{cells}</sheetData>'
                                               "</worksheet>")
    return path


def pdf(path: Path, pages: list[str], labels: bool = True, password: str = "") -> Path:
    import pymupdf

    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 540, 770), text)
    if labels:
        doc.set_page_labels([{"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1}])
    if password:
        doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw=password + "!")
    else:
        doc.save(path)
    doc.close()
    return path


def converter(path: Path, output: str) -> Path:
    """A stand-in converter binary that prints `output` (for detex/unrtf/whisper plumbing)."""
    path.write_text(f"#!/bin/sh\ncat <<'END'\n{output}\nEND\n")
    path.chmod(0o755)
    return path


def ruled_table_pdf(path: Path, caption: str, rows: list[list[str]], prose_after: str = "") -> Path:
    """A page with a caption and a table drawn with ruling lines (as manuals print them), then a page of
    `prose_after` when given."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "Chapter 3. Gauges", fontsize=14)
    page.insert_text((72, 90), caption, fontsize=10)
    x0, y0, width, height = 72, 100, 150, 16
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            page.insert_text((x0 + c * width + 4, y0 + r * height + 12), cell, fontsize=9)
    cols = max(len(r) for r in rows)
    for r in range(len(rows) + 1):
        page.draw_line((x0, y0 + r * height), (x0 + cols * width, y0 + r * height))
    for c in range(cols + 1):
        page.draw_line((x0 + c * width, y0), (x0 + c * width, y0 + len(rows) * height))
    page.insert_text((72, y0 + len(rows) * height + 30), "Check every gauge before the pump starts.", fontsize=10)
    if prose_after:
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 770), prose_after)
    doc.save(path)
    doc.close()
    return path
