"""`I` on a collection in the collections pane opens what `ragtui collections info` reports of it, its entropy
histogram drawn by textual-plotext's widget: bars as tall as the counts of a collection whose chunk entropies are
known, inside the dialog at 80 columns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import ListView, Static
from textual_plotext import PlotextPlot

from ragtui.config import Settings
from ragtui.tui.screens.collection_info import CollectionInfoScreen
from tests.fake_ollama import FakeOllama
from tests.test_plots_cli import assert_bars_follow, known_collection
from tests.tui.conftest import main_screen, quiet_app


async def test_collection_info_shows_the_report_and_the_histogram_drawn_at_80_columns(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    counts = known_collection(tmp_path, fake_ollama)
    app = quiet_app(make_settings())
    async with app.run_test(size=(80, 40)) as pilot:
        main = main_screen(app)
        main.load_collections()
        await app.workers.wait_for_complete()
        await pilot.pause()
        main.query_one("#collections", ListView).focus()
        await pilot.press("I")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, CollectionInfoScreen)
        text = str(app.screen.query_one("#collection-info-text", Static).render())
        assert "files 10, chunks 10" in text and "quality of 10 chunks:" in text
        assert "natural language" in str(app.screen.query_one("#collection-clusters", Static).render())
        plot = app.screen.query_one(PlotextPlot)
        assert 40 <= plot.size.width <= 80 and plot.region.right <= 80        # within the dialog, within the screen
        lines = plot.render().plain.splitlines()                             # type: ignore[union-attr]
        assert "entropy histogram (bits/byte): chunks per bin, 10 in all" in lines[0]
        assert max(len(line) for line in lines) <= plot.size.width
        assert_bars_follow(lines, counts)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CollectionInfoScreen)
