"""Two documents with structure, and how their chunks keep it: a PDF manual with ruled tables, a Sphinx page.

    python -m benchmarks.structure_docs write DIR          # manual.pdf, sphinx.html, mkdocs.html, notes.md
    ragtui --data-dir D ingest DIR -c manuals && ragtui --data-dir D collections info manuals
    python -m benchmarks.structure_docs check D manuals            # per file: the figures below
    python -m benchmarks.structure_docs speed [--mib 5]            # CPU cost of finding the units

The manual (8 pages) has prose, numbered steps, and three ruled tables: two that
fit a chunk (4 and 40 short rows) and one of 40 longer rows that does not. The
Sphinx page has the body marked role=main, a sidebar, a docutils table (a <p>
in each cell), a bullet list and four `highlight-python` code blocks, one longer
than a chunk; the MkDocs-like page has a table with bare cells and a long
`language-python` code block; notes.md has the fault table and the long code
block in markdown (whose structure any version can see, so `collections info`
counts the chunks that start inside them). `check` reads the
collection's chunks (any ragtui version) and counts, per file: chunks, chunks
holding a table row, those of them that also hold the table's header row,
chunks that open or close a code fence without the other end (a fence cut
apart), whether cells ran together ("gaugerangefaults", "gauge 0010 bar"), and
whether the long code block kept its indentation.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

PROSE = ("The pump draws water from the tank and pushes it through the filter. Check the seals before each "
         "season and replace the filter cartridge when the pressure drop exceeds the limit in the table. ")
HEADER = ["gauge", "range", "faults"]
ROWS = [[f"gauge {i:02d}", f"{i * 5 + 10} bar", ["none", "leak at seal", "drift", "stuck needle"][i % 4]]
        for i in range(40)]
FAULTS = [["code", "symptom", "remedy"]] + [[f"E{i:03d}", f"pressure above limit at stage {i}",
                                            f"replace seal kit {i} and restart"] for i in range(40)]
SMALL = [["valve", "torque", "interval"], ["inlet valve", "12 Nm", "yearly"], ["outlet valve", "15 Nm", "yearly"],
         ["bypass valve", "9 Nm", "every two years"]]
# Each table's rows (by their first cell) and its header row (whatever joins the cells).
TABLES = ((re.compile(r"gauge \d\d\b"), re.compile(r"gauge\W*range\W*faults")),
          (re.compile(r"\bE0\d\d\b"), re.compile(r"code\W*symptom\W*remedy")),
          (re.compile(r"(?:inlet|outlet|bypass) valve\b"), re.compile(r"valve\W*torque\W*interval")))
GLUED = re.compile(r"gaugerange|gauge \d{4,} bar")             # cells run together: "gauge 0010 bar"


def _ruled_table(page: object, top: float, rows: list[list[str]]) -> float:
    """Rows drawn with ruling lines from y = top; the y below the table."""
    x0, width, height = 40, 175, 15
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            page.insert_text((x0 + c * width + 4, top + r * height + 11), cell, fontsize=9)  # type: ignore[attr-defined]
    for r in range(len(rows) + 1):
        page.draw_line((x0, top + r * height), (x0 + 3 * width, top + r * height))  # type: ignore[attr-defined]
    for c in range(4):
        page.draw_line((x0 + c * width, top), (x0 + c * width, top + len(rows) * height))  # type: ignore[attr-defined]
    return top + len(rows) * height


def write_manual(path: Path) -> None:
    import pymupdf

    doc = pymupdf.open()
    toc = []
    for chapter in range(1, 9):
        page = doc.new_page()
        page.insert_text((72, 60), f"Chapter {chapter}. " + ["Safety", "Installation", "Gauges", "Valves",
                                                           "Maintenance", "Faults", "Parts", "Warranty"][chapter - 1],
                         fontsize=14)
        toc.append([1, f"Chapter {chapter}", chapter])
        y = 80.0
        if chapter in (3, 6):
            caption, rows = (("Table 3.1: Gauge ranges and known faults", [HEADER, *ROWS]) if chapter == 3
                             else ("Table 6.1: Fault codes", FAULTS))
            page.insert_text((72, y + 10), caption, fontsize=10)
            y = _ruled_table(page, y + 20, rows) + 20
            page.insert_textbox(pymupdf.Rect(72, y, 540, 800), PROSE, fontsize=10)
            continue
        if chapter == 4:
            page.insert_text((72, y + 10), "Table 4.1: Valve torques", fontsize=10)
            y = _ruled_table(page, y + 20, SMALL) + 20
        steps = "".join(f"{i}. Open valve {i}, wait until the gauge settles, then note the reading.\n"
                        for i in range(1, 6))
        page.insert_textbox(pymupdf.Rect(72, y, 540, 800), PROSE * 6 + "\n" + steps + "\n" + PROSE * 4, fontsize=10)
    doc.set_toc(toc)
    doc.save(path)
    doc.close()


def write_sphinx(path: Path) -> None:
    code = ["def check(gauge):\n    if gauge.reading > gauge.limit:\n        return 'high'\n    return 'ok'\n",
            "".join(f"    pump.set_speed(stage={i}, rpm={i * 250})  # stage {i}\n" for i in range(70)),
            "import pump\n\npump.start()\n", "for g in gauges:\n    print(g.name, check(g))\n"]
    blocks = "".join(f'<p>{PROSE}</p><div class="highlight-python notranslate"><div class="highlight"><pre>'
                     f"{c.replace('>', '&gt;')}</pre></div></div>" for c in code)
    rows = "".join(f'<tr class="row-odd"><td><p>{a}</p></td><td><p>{b}</p></td><td><p>{c}</p></td></tr>\n'
                   for a, b, c in ROWS[:8])
    table = ('<table class="docutils align-default"><caption><span class="caption-text">Gauge ranges</span>'
             '</caption><thead><tr class="row-odd"><th class="head"><p>gauge</p></th><th class="head"><p>range</p>'
             f'</th><th class="head"><p>faults</p></th></tr></thead><tbody>{rows}</tbody></table>')
    items = "".join(f"<li><p>Step {i}: open valve {i} and wait until the gauge settles.</p></li>" for i in range(8))
    path.write_text(
        '<!DOCTYPE html><html><head><title>Pump API</title></head><body>'
        '<div class="sphinxsidebar" role="navigation"><h3>Navigation</h3><ul><li>Index</li></ul></div>'
        '<div class="body" role="main"><section id="pump-api"><h1>Pump API<a class="headerlink">¶</a></h1>'
        f'<p>{PROSE * 3}</p><section id="gauges"><h2>Gauges</h2><p>{PROSE}</p>{table}<ul>{items}</ul>'
        f'</section><section id="examples"><h2>Examples</h2>{blocks}</section></section></div>'
        '<div class="footer">© Pump Inc.</div></body></html>')


def write_mkdocs(path: Path) -> None:
    """A page as MkDocs renders markdown: cells without paragraphs, code in <pre><code class="language-...">."""
    rows = "".join(f"<tr><td>{a}</td><td>{b}</td><td>{c}</td></tr>" for a, b, c in ROWS[:6])
    code = "".join(f"    pump.set_speed(stage={i}, rpm={i * 250})  # stage {i}\n" for i in range(70))
    path.write_text(
        '<html><body><nav class="md-nav">Home</nav><article class="md-content__inner"><h1>Gauges</h1>'
        f"<p>{PROSE * 2}</p><table><thead><tr><th>gauge</th><th>range</th><th>faults</th></tr></thead>"
        f'<tbody>{rows}</tbody></table><p>{PROSE}</p><pre><code class="language-python">def run(pump):\n{code}'
        f"</code></pre><p>{PROSE}</p></article></body></html>")


def write_markdown(path: Path) -> None:
    """Service notes in markdown: the fault table (longer than a chunk) and the long code block, fenced."""
    table = "".join(f"| {a} | {b} | {c} |\n" for a, b, c in FAULTS[1:])
    code = "".join(f"    pump.set_speed(stage={i}, rpm={i * 250})  # stage {i}\n" for i in range(70))
    path.write_text(f"# Service notes\n\n{PROSE * 4}\n\nTable 1: Fault codes\n\n| code | symptom | remedy |\n"
                    f"|---|---|---|\n{table}\n{PROSE * 3}\n\n```python\ndef run(pump):\n{code}```\n\n{PROSE * 3}\n")


def check(data_dir: Path, name: str) -> None:
    from ragtui.config import load_settings
    from ragtui.library import CollectionRegistry

    settings = load_settings(overrides=[f"storage.data_dir={data_dir}"])
    coll = CollectionRegistry(settings).open(name)
    try:
        chunks = coll.keyword.get(sorted(coll.keyword.ids()))
    finally:
        coll.close()
    print("| file | chunks | chunks with a table row | of them with that table's header row | fences cut apart | "
          "cells run together | code indentation kept |")
    print("|---|---|---|---|---|---|---|")
    for source in sorted({c.meta.source for c in chunks}):
        mine = [c for c in chunks if c.meta.source == source]
        with_rows = [c for c in mine if any(row.search(c.text) for row, _ in TABLES)]
        headed = [c for c in with_rows if all(head.search(c.text) for row, head in TABLES if row.search(c.text))]
        cut = sum(c.text.count("```") % 2 == 1 for c in mine)
        glued = any(GLUED.search(c.text) for c in mine)
        indented = ("-" if not any("pump.set_speed" in c.text for c in mine)     # the long code block
                    else "yes" if any("\n    pump.set_speed" in c.text for c in mine) else "no")
        print(f"| {source} | {len(mine)} | {len(with_rows)} | {len(headed)} | {cut} | {'yes' if glued else 'no'} | "
              f"{indented} |")


def speed(mib: int) -> None:
    """CPU seconds of the chunk spans with and without the structure units, on a markdown text
    that is half tables, lists and fences, a csv-like table, and prose (the yardstick: no structure)."""
    import time

    from ragtui.ingest.chunking import markdown_spans, window_chars, window_spans
    from ragtui.ingest.structure import parts

    size = mib * 2**20
    block = (f"## Part\n\n{PROSE * 3}\n\nTable: faults\n\n| code | symptom | remedy |\n|---|---|---|\n"
             + "".join(f"| {a} | {b} | {c} |\n" for a, b, c in FAULTS[1:20])
             + "\n" + "".join(f"- Step {i}: open valve {i} and wait.\n" for i in range(12))
             + "\n```python\n" + "".join(f"    pump.set_speed(stage={i})\n" for i in range(30)) + "```\n\n")
    texts = {"markdown with tables, lists, fences": block * (size // len(block)),
             "csv-like table": "a | b | c\n" + "".join(f"row {i} | {i * 7} | value {i}\n" for i in range(size // 24)),
             "prose": PROSE * (size // len(PROSE))}
    chars, overlap = window_chars(384, 50)
    print("| text | MiB | window alone | finding the units (`parts`) | window with units | markdown sections "
          "with units | units + window / window alone |")
    print("|---|---|---|---|---|---|---|")
    for name, text in texts.items():
        t = time.process_time()
        window_spans(text, chars, overlap)
        plain = time.process_time() - t
        t = time.process_time()
        units = parts(text, chars)
        found = time.process_time() - t
        bounds = [(u.start, u.end) for u in units]
        leads = {u.start: len(u.lead) for u in units if u.lead}
        t = time.process_time()
        window_spans(text, chars, overlap, units=bounds, leads=leads)
        windowed = time.process_time() - t
        t = time.process_time()
        markdown_spans(text, chars, overlap, bounds, leads)
        md = time.process_time() - t
        print(f"| {name} | {len(text) / 2**20:.1f} | {plain:.2f} | {found:.2f} | {windowed:.2f} | {md:.2f} | "
              f"{(found + windowed) / plain:.1f}x |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("dir", type=Path)
    c = sub.add_parser("check")
    c.add_argument("data_dir", type=Path)
    c.add_argument("collection")
    sp = sub.add_parser("speed")
    sp.add_argument("--mib", type=int, default=5)
    args = parser.parse_args()
    if args.command == "write":
        args.dir.mkdir(parents=True, exist_ok=True)
        write_manual(args.dir / "manual.pdf")
        write_sphinx(args.dir / "sphinx.html")
        write_mkdocs(args.dir / "mkdocs.html")
        write_markdown(args.dir / "notes.md")
    elif args.command == "speed":
        speed(args.mib)
    else:
        check(args.data_dir, args.collection)
    return 0


if __name__ == "__main__":
    sys.exit(main())
