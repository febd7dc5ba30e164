"""Build corpus/darwin-origin-of-species.pdf from darwin.txt (a page per `\\f` line), with page labels.

The labels start at 60, so the demo shows a printed page label ([p.61]) that
differs from the PDF's page index.

Run with `python -m ragtui.demo.make_pdf`; the PDF is committed, so the demo
needs no build step.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

HERE = Path(__file__).resolve().parent
PAGE_LABELS = [{"startpage": 0, "prefix": "", "style": "D", "firstpagenum": 60}]


def build(source: Path = HERE / "darwin.txt", target: Path = HERE / "corpus" / "darwin-origin-of-species.pdf") -> Path:
    pages = source.read_text(encoding="utf-8").split("\\f\n")
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page(width=420, height=595)
        page.insert_textbox(pymupdf.Rect(40, 40, 380, 555), text.strip(), fontsize=10, fontname="times-roman")
    doc.set_page_labels(PAGE_LABELS)
    doc.set_metadata({"title": "On the Origin of Species (passages)", "author": "Charles Darwin",
                      "creationDate": "D:18591124000000", "modDate": "D:18591124000000"})
    doc.save(target, garbage=4, deflate=True, no_new_id=True)
    return target


if __name__ == "__main__":
    print(build())
