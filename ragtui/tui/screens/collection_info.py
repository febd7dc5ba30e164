"""A collection as `ragtui collections info` reports it, with its entropy histogram drawn as bars (plotext, through
textual-plotext's widget, which sizes the plot to the dialog and colours it from the app's theme). The lines come
from the engine's one writer of that report and are shown as plain text, never as markup: they hold file names and
reasons read from documents."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static
from textual_plotext import PlotextPlot

from ragtui import plots
from ragtui.sanitize import one_line
from ragtui.tui.engine_door import cluster_lines, histogram_title, profile_lines

if TYPE_CHECKING:
    from ragtui.tui.engine_door import CollectionProfile


class CollectionInfoScreen(ModalScreen[None]):
    BINDINGS: ClassVar = [Binding("escape,q,I", "dismiss", "Close")]

    def __init__(self, profile: CollectionProfile) -> None:
        super().__init__()
        self.profile = profile

    def compose(self) -> ComposeResult:
        p = self.profile
        with VerticalScroll(id="collection-info-box", classes="dialog"):
            yield Static(Text(one_line(f"Collection {p.info.name}")), classes="dialog-title")
            yield Static(Text("\n".join(profile_lines(p))), id="collection-info-text")
            if sum(p.histogram):
                yield PlotextPlot(id="entropy-plot")
                yield Static(Text("\n".join(cluster_lines(p.clusters))), id="collection-clusters")
            yield Static("esc closes", classes="dialog-hint")

    def on_mount(self) -> None:
        p = self.profile
        for plot in self.query(PlotextPlot):
            plots.draw_histogram(plot.plt, p.histogram, *p.histogram_range, title=histogram_title(p.histogram),
                                 xlabel="bits per byte")
