"""How long a cited page of a 300-page PDF takes to draw with its chunk and quote boxed (issue: under 1 s).

    python -m benchmarks.page_render [--pages 300] [--runs 5]

A 300-page PDF (a paragraph of prose and a small vector figure a page, one rare word on page 250 only) is
ingested and asked through the real CLI against the tests' fake Ollama over HTTP; the source on page 250 is then
drawn as a user does:

- `ragtui page N -o FILE.png`, a fresh CLI process each run: wall time and the child's CPU time, beside a
  fresh `ragtui history list` (the CLI's start and a history read, the yardstick for a command's own cost);
- the TUI (headless, 200x50, half-blocks, the session reopened): from the page view's opening until its page is
  on screen (drawn in the worker thread, cropped to the boxes, painted), wall time, each run a new page view;
- in one warm process, what the page view's worker does (`AsyncWorkspace.page`: the PDF found and its hash
  checked, `Workspace.source_pdf`, then `page_render.render_part`), wall and CPU;
- the yardstick, in the same process: PyMuPDF alone opening the PDF and writing that page as a PNG at the same
  zoom, with no search and no boxes (the floor for drawing the page at all).

Prints the median of each and their ratio to the yardstick.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RARE = "zirconium"
TARGET = 250


def build_pdf(path: Path, pages: int) -> None:
    import pymupdf

    prose = ("Turbine blades sit in the hot gas path and are cast from nickel superalloys; engineers measure "
             "their temperature with thermocouples at many stations along the span. ")
    with pymupdf.open() as doc:
        for number in range(1, pages + 1):
            page = doc.new_page()
            text = prose * 6
            if number == TARGET:
                text += f"The {RARE} oxide coating reflects radiant heat back into the gas stream. " + prose
            page.insert_textbox(pymupdf.Rect(50, 50, 550, 500), text, fontsize=10)
            page.draw_rect(pymupdf.Rect(80, 540, 520, 760), color=(0, 0, 0), fill=(0.9, 0.9, 1))
            page.draw_line(pymupdf.Point(80, 760), pymupdf.Point(520, 540 + number % 200))
        doc.save(str(path))


def cli(data: Path, host: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "ragtui", "--data-dir", str(data), "--ollama-host", host,
            "--set", "synonyms.enabled=false", "--set", "llm.model=chat", "--set", "retrieve.min_similarity=0",
            "--set", "keyword.min_query_ic=0", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False,
                          env={**os.environ, "HOME": str(data)})


async def in_the_tui(settings: Any, session_id: int, number: int, runs: int) -> tuple[list[float], list[float]]:
    """Seconds from opening the page view on source `number` until its page is painted, per run: wall, and CPU
    (the process's, its threads included)."""
    from ragtui.tui.app import RagtuiApp
    from ragtui.tui.screens.page_view import PageView

    app = RagtuiApp(settings, cursor_blink=False, start_workers=False)
    times, cpu = [], []
    async with app.run_test(size=(200, 50)) as pilot:
        research = app.get_screen("research").research         # type: ignore[attr-defined]
        await research.reopen(session_id)
        while research.session is None or not research.session.sources:
            await pilot.pause()
        source = research.session.source(number)
        for _ in range(runs):
            start, used = time.perf_counter(), time.process_time()
            research.page_view(source)
            while not (isinstance(app.screen, PageView) and app.screen.frame is not None):
                await asyncio.sleep(0.005)
            painted = asyncio.get_running_loop().create_future()
            app.call_after_refresh(lambda: painted.set_result(time.perf_counter()))   # noqa: B023
            times.append(await painted - start)
            cpu.append(time.process_time() - used)
            await pilot.press("escape")
            await pilot.pause()
    return times, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    from tests.fake_ollama import FakeOllama

    fake = FakeOllama().start()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = root / "papers"
        folder.mkdir()
        pdf = folder / "long.pdf"
        build_pdf(pdf, args.pages)
        data = root / "data"
        done = cli(data, fake.url, "ingest", str(folder), "-c", "papers")
        assert done.returncode == 0, done.stderr
        done = cli(data, fake.url, "ask", f"{RARE} oxide coating", "--json")
        assert done.returncode == 0, done.stderr
        asked = json.loads(done.stdout)
        source = next((s for s in asked["sources"] if s["page"] == str(TARGET)), None)
        assert source is not None, [(s["page"], s["page_last"]) for s in asked["sources"]]
        number = str(source["number"])

        cli_wall, cli_cpu, start_wall, start_cpu = [], [], [], []
        for run in range(args.runs):
            for command, wall, cpu in ((("page", number, "-o", str(root / f"p{run}.png")), cli_wall, cli_cpu),
                                       (("history", "list"), start_wall, start_cpu)):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                done = cli(data, fake.url, *command)
                wall.append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
                assert done.returncode == 0, done.stderr

        from ragtui.config import load_settings
        from ragtui.page_render import DEFAULT_ZOOM, page_parts, render_part
        from ragtui.workspace import Workspace

        settings = load_settings(user_file=root / "none.toml", env={}, overrides=[
            f"storage.data_dir={data}", f"ollama.host={fake.url}", "synonyms.enabled=false",
            "ui.page_graphics=halfblock"])
        tui_wall, tui_cpu = asyncio.run(in_the_tui(settings, int(asked["session"]), int(number), args.runs))
        view_wall, view_cpu, floor_wall, floor_cpu = [], [], [], []
        with Workspace(settings) as workspace:
            session = workspace.reopen(int(asked["session"]))
            chosen = session.source(int(number))
            part = page_parts(chosen.chunk)[0]
            render_part(workspace.source_pdf(chosen.chunk), part, chosen.quote)      # pymupdf imported once
            for _ in range(args.runs):
                start, cpu = time.perf_counter(), time.process_time()
                rendered = render_part(workspace.source_pdf(chosen.chunk), part, chosen.quote)
                view_wall.append(time.perf_counter() - start)
                view_cpu.append(time.process_time() - cpu)

                import pymupdf

                start, cpu = time.perf_counter(), time.process_time()
                with pymupdf.open(str(pdf)) as doc:
                    doc[part.index].get_pixmap(matrix=pymupdf.Matrix(DEFAULT_ZOOM, DEFAULT_ZOOM)).tobytes("png")
                floor_wall.append(time.perf_counter() - start)
                floor_cpu.append(time.process_time() - cpu)
    fake.stop()

    def med(values: list[float]) -> float:
        return statistics.median(values)

    print(f"{args.pages}-page PDF ({pdf.name}), source [{number}] on page {part.label}: "
          f"{len(rendered.chunk_boxes)} chunk box(es), {len(rendered.quote_boxes)} quote box(es), "
          f"{rendered.width}x{rendered.height} pixels; median of {args.runs} runs")
    print(f"  ragtui page (fresh CLI)     wall {med(cli_wall):.3f} s  cpu {med(cli_cpu):.3f} s")
    print(f"  CLI yardstick: history list wall {med(start_wall):.3f} s  cpu {med(start_cpu):.3f} s")
    print(f"  TUI: v until the page shows wall {med(tui_wall):.3f} s  cpu {med(tui_cpu):.3f} s")
    print(f"  page view's draw (warm)     wall {med(view_wall):.3f} s  cpu {med(view_cpu):.3f} s  "
          f"= {med(view_wall) / med(floor_wall):.1f}x the yardstick")
    print(f"  yardstick: pymupdf alone    wall {med(floor_wall):.3f} s  cpu {med(floor_cpu):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
