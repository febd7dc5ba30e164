"""Numbers drawn as shapes in the terminal, with plotext (https://github.com/piccolomo/plotext), for both front ends:
`draw_histogram` (counts over equal bins, e.g. a collection's chunk entropy) and `draw_intervals` (rows of a label,
a value and its confidence interval, a whisker from the low end to the high end with the value marked: an eval's
metric per mode or per model).

The `draw_*` functions draw on a plotext figure: the `plotext` module itself in the CLI (`rendered` builds the text)
or the `plt` of a textual-plotext `PlotextPlot` in the TUI; both have the same figure methods. Labels are untrusted
(a model's name comes from a server) and are made inert and clipped before plotext sees them. plotext is imported
where the text is built, not when this module is (about 40 ms, docs/benchmarks.md, "What `--plot` costs"); it is
none of the libraries `heavy.load` orders, with no import cycle of its own.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TextIO

from ragtui.sanitize import one_line
from ragtui.textfit import clip_line

MIN_WIDTH = 40           # narrower, the axes leave no room for the shape: the caller prints its table instead
MAX_WIDTH = 120          # wider, a bar or a whisker gains nothing but length
LABEL_WIDTH = 24         # the longest row label kept (the rest of a long model name is cut)
HISTOGRAM_HEIGHT = 16    # lines of a histogram, title and axes included
BAR_MARKER = "sd"        # plotext's full-block marker: a bar's height is whole lines, read as a count
VALUE_MARKER = "●"
WHISKER_END = "|"


class Interval(NamedTuple):
    """One row of an interval plot: a label, a value and its confidence interval (ci_low <= value <= ci_high)."""

    label: str
    value: float
    ci_low: float
    ci_high: float


def label(text: str) -> str:
    """A row label as plotext may print it: one line of inert text, at most LABEL_WIDTH cells."""
    return clip_line(one_line(text), LABEL_WIDTH)


def draw_histogram(plt: Any, counts: Sequence[int], lo: float, hi: float, *, title: str, xlabel: str) -> None:
    """Bars over `len(counts)` equal bins of [lo, hi], at their centres, touching; the axis ticked at whole units."""
    width = (hi - lo) / len(counts)
    plt.bar([lo + (i + 0.5) * width for i in range(len(counts))], list(counts), width=1.0, marker=BAR_MARKER)
    plt.xlim(lo, hi)
    plt.xticks(list(range(int(lo), int(hi) + 1)))
    plt.title(one_line(title))
    plt.xlabel(one_line(xlabel))


def draw_intervals(plt: Any, rows: Sequence[Interval], *, title: str,
                   bounds: tuple[float, float] | None = None) -> None:
    """One row per interval, first row on top: a whisker from ci_low to ci_high with ends `|`, the value as `●`;
    the x axis over `bounds` (e.g. (0, 1) for a rate), else over the intervals with a margin."""
    n = len(rows)
    for i, row in enumerate(rows):
        y = n - i
        plt.plot([row.ci_low, row.ci_high], [y, y], marker="-", color="blue")
        plt.scatter([row.ci_low, row.ci_high], [y, y], marker=WHISKER_END, color="blue")
        plt.scatter([row.value], [y], marker=VALUE_MARKER, color="red")
    plt.yticks([n - i for i in range(n)], [label(r.label) for r in rows])
    plt.ylim(0.5, n + 0.5)
    lo, hi = bounds if bounds is not None else _span(rows)
    plt.xlim(lo, hi)
    plt.title(one_line(title))


def intervals_height(rows: int) -> int:
    """Lines of an interval plot of `rows` rows: the title, the axes and 2 * rows + 1 lines of canvas, so that
    each row falls on a line of its own with one line between (plotext rounds a row to the nearest line)."""
    return 2 * rows + 5


def _span(rows: Sequence[Interval]) -> tuple[float, float]:
    lo, hi = min(r.ci_low for r in rows), max(r.ci_high for r in rows)
    margin = (hi - lo) * 0.05 or abs(hi) * 0.05 or 1.0
    return lo - margin, hi + margin


def plot_width() -> int:
    """The width to draw at: COLUMNS when set, else the terminal's columns (80 for a pipe), at most MAX_WIDTH."""
    return min(shutil.get_terminal_size((80, 24)).columns, MAX_WIDTH)


def coloured(stream: TextIO) -> bool:
    """Whether to colour a plot: only on a terminal, and not when NO_COLOR is set to anything (https://no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def for_stream(draw: Callable[[Any], None], height: int, stream: TextIO) -> str | None:
    """The plot `draw` makes, as wide as `plot_width` and coloured as `coloured` says for `stream`; None when that
    width is under MIN_WIDTH (the caller says so and prints its table)."""
    width = plot_width()
    return None if width < MIN_WIDTH else rendered(draw, width, height, colour=coloured(stream))


def too_narrow() -> str:
    """What a caller says where `for_stream` gave no plot."""
    return f"(the terminal is {plot_width()} columns wide; a plot needs {MIN_WIDTH})"


def rendered(draw: Callable[[Any], None], width: int, height: int, *, colour: bool) -> str:
    """The text of one plot `draw` makes on a fresh plotext figure, `width` x `height` cells; without `colour`,
    not one escape sequence (plotext's colourless theme still writes resets, which `uncolorize` takes out)."""
    import plotext

    plotext.clear_figure()
    plotext.limit_size(False, False)     # the size asked for, not cut to the terminal's (80 x 24 for a pipe)
    draw(plotext)
    plotext.plotsize(width, height)
    if not colour:
        plotext.theme("clear")
    text: str = plotext.build()
    return text if colour else plotext.uncolorize(text)
