"""How the page view draws an image: textual-image's widgets, by the mode `ui.page_graphics` names.

`kitty` is the Kitty terminal graphics protocol (https://sw.kovidgoyal.net/kitty/graphics-protocol/), `sixel`
DEC's Sixel graphics, `halfblock` coloured upper-half-block characters (two pixels a cell, in any terminal that
shows 24-bit colour: tmux, SSH, `ragtui serve`'s browser terminal). `auto` takes what textual-image finds: as it is
imported, its `textual_image.renderable` asks the terminal (the device attributes, whose 4 means Sixel, then a
Kitty graphics query; each waits at most 0.1 s) and its `textual_image.widget` asks the cell size in pixels. The
replies are read from stdin, which Textual owns once it runs, so `choose` imports it before the app starts,
whatever the setting; with stdout not a terminal nothing is asked and half-blocks are drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage
    from textual.widget import Widget

Mode = Literal["kitty", "sixel", "halfblock"]


def choose(setting: str) -> Mode:
    """The mode `ui.page_graphics` names; for "auto", the best the terminal answers it can show. textual-image
    asks the terminal as it loads, whatever the setting, so it is loaded here, before the app starts."""
    import textual_image.widget  # noqa: F401  (its import asks the terminal, while it still can)
    from textual_image import renderable

    if setting in ("kitty", "sixel", "halfblock"):
        return setting  # type: ignore[return-value]
    if renderable.Image is renderable.SixelImage:
        return "sixel"
    if renderable.Image is renderable.TGPImage:
        return "kitty"
    return "halfblock"     # HalfcellImage in a terminal, UnicodeImage (quarter blocks) when not one


def image_widget(mode: Mode, image: PILImage, *, id: str) -> Widget:
    """A textual-image widget that draws `image` in `mode` (its `image` attribute takes another)."""
    from textual_image.widget import HalfcellImage, SixelImage, TGPImage

    kind = {"kitty": TGPImage, "sixel": SixelImage, "halfblock": HalfcellImage}[mode]
    widget: Widget = kind(image, id=id)
    return widget


def cell_pixels() -> tuple[int, int]:
    """A terminal cell's width and height in pixels, as textual-image found them (10 x 20 when it could not ask)."""
    from textual_image.widget import get_cell_size

    size = get_cell_size()
    return size.width, size.height
