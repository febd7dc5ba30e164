"""The page view: the PDF page a source's chunk lies on, its text boxed in blue and the annotation's quote in red
(ragtui.page_render draws it, in a worker thread), shown by a textual-image widget in the mode chosen as the app
started (tui/page_graphics.py).

It opens zoomed to the boxes; z switches between them and the whole page, + / - zoom, the arrows or h j k l pan,
] / [ go to the next / previous page of a chunk that runs over pages, and o hands the page at full resolution to
the browser under `ragtui serve` (Textual's `App.deliver_binary`, through textual-serve's own download route on
the same guarded server) or writes it under the data dir in a terminal, saying where.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ragtui.errors import RagtuiError, describe
from ragtui.model.conversation import SessionSource
from ragtui.sanitize import clean, one_line
from ragtui.tui.engine_door import (
    CHUNK_COLOUR,
    QUOTE_COLOUR,
    AsyncWorkspace,
    Box,
    PagePart,
    RenderedPage,
    page_parts,
)
from ragtui.tui.page_graphics import Mode, cell_pixels, image_widget

if TYPE_CHECKING:
    from PIL.Image import Image

ZOOM_STEP = 1.5          # + / - scale the view by this much
PAN_STEP = 0.25          # an arrow moves the view by this share of its width or height
BOX_MARGIN = 0.08        # room around the boxes, as a share of their size, when zoomed to them
MIN_WIDTH = 40           # pixels: the narrowest view (+ stops there)
MARGIN = (96, 96, 96)    # beyond the page's edge: grey, so that a white page shows where it ends


@dataclass(frozen=True)
class Frame:
    """The part of the page image in view: its centre and width in the image's pixels (the height follows from
    the view's shape)."""

    cx: float
    cy: float
    width: float


def fitted(box: tuple[float, float, float, float], aspect: float, margin: float = 0.0) -> Frame:
    """The frame that shows `box` (x0, y0, x1, y1) whole in a view `aspect` times as wide as high."""
    x0, y0, x1, y1 = box
    pad = margin * max(x1 - x0, y1 - y0)
    width = max(x1 - x0 + 2 * pad, (y1 - y0 + 2 * pad) * aspect, MIN_WIDTH)
    return Frame((x0 + x1) / 2, (y0 + y1) / 2, width)


def cropped(image: Image, frame: Frame, aspect: float) -> Image:
    """The part of `image` in `frame`, on MARGIN where the frame runs past the page."""
    from PIL import Image as PILImage

    width, height = max(1, round(frame.width)), max(1, round(frame.width / aspect))
    left, top = round(frame.cx - width / 2), round(frame.cy - height / 2)
    canvas = PILImage.new("RGB", (width, height), MARGIN)
    inside = (max(0, left), max(0, top), min(image.width, left + width), min(image.height, top + height))
    if inside[0] < inside[2] and inside[1] < inside[3]:
        canvas.paste(image.crop(inside), (inside[0] - left, inside[1] - top))
    return canvas


def fitted_to_view(image: Image, frame: Frame, aspect: float, size: tuple[int, int],
                   boxes: list[tuple[Box, tuple[int, int, int]]]) -> Image:
    """The part of the page in `frame`, scaled down to `size` pixels (what the terminal shows: a cell's pixels,
    or two a cell in half-blocks), with each box's frame traced again one pixel wide in its colour at that size:
    scaled down ten times, page_render's lines would fade into the paper."""
    from PIL import Image as PILImage
    from PIL import ImageDraw

    part = cropped(image, frame, aspect)
    left, top = round(frame.cx - part.width / 2), round(frame.cy - part.height / 2)     # as `cropped` cut it
    scale = min(1.0, size[0] / part.width)
    if scale < 1.0:
        part = part.resize((max(1, round(part.width * scale)), max(1, round(part.height * scale))),
                           PILImage.Resampling.LANCZOS)
    draw = ImageDraw.Draw(part)
    for box, colour in boxes:
        x0, y0 = (box.x0 - left) * scale, (box.y0 - top) * scale
        x1, y1 = (box.x1 - left) * scale - 1, (box.y1 - top) * scale - 1
        if x1 > x0 and y1 > y0:
            draw.rectangle((x0, y0, x1, y1), outline=colour, width=max(1, round(2 * scale)))
    return part


class PageView(ModalScreen[None]):
    BINDINGS: ClassVar = [
        Binding("escape,q", "close", "Close"),
        Binding("z", "fit", "Boxes / page"),
        Binding("plus,equals_sign", "zoom(1)", "Zoom in", key_display="+"),
        Binding("minus", "zoom(-1)", "Zoom out", key_display="-"),
        Binding("left,h", "pan(-1, 0)", "Pan", key_display="←↑↓→"),
        Binding("right,l", "pan(1, 0)", "Pan right", show=False),
        Binding("up,k", "pan(0, -1)", "Pan up", show=False),
        Binding("down,j", "pan(0, 1)", "Pan down", show=False),
        Binding("right_square_bracket,n", "page(1)", "Next page", key_display="]"),
        Binding("left_square_bracket,p", "page(-1)", "Prev page", key_display="["),
        Binding("o", "full_size", "Full size"),
    ]

    def __init__(self, source: SessionSource, workspace: AsyncWorkspace, mode: Mode, *, session_id: int = 0) -> None:
        super().__init__()
        self.source = source
        self.workspace = workspace
        self.mode = mode
        self.session_id = session_id
        self.parts: list[PagePart] = page_parts(source.chunk)
        self.at = 0
        self.rendered: dict[int, RenderedPage] = {}
        self.image: tuple[int, Image] | None = None     # the page shown, decoded (one at a time: up to 36 MB)
        self.frame: Frame | None = None
        self.whole = False          # the whole page in view (z), not the boxes
        self.shown_in: Size | None = None   # the view's size when the page was last fitted to it

    def compose(self) -> ComposeResult:
        with Vertical(id="page-box"):
            yield Static(self._head(), id="page-head")
            yield Static("", id="page-where")
            yield Container(id="page-frame")
        yield Footer()

    def on_mount(self) -> None:
        self.draw()

    def _head(self) -> Text:
        meta = self.source.chunk.meta
        text = Text()
        text.append(f"[{self.source.number}] {one_line(meta.collection)}/{one_line(meta.source)}", style="bold")
        text.append("  the chunk ", style="dim")
        text.append("boxed blue", style="bold #1e64e6")
        if self.source.quote:
            text.append(", the quote ", style="dim")
            text.append("boxed red", style="bold #e61e1e")
        return text

    # --- drawing ------------------------------------------------------------------------------

    @work(group="page", exclusive=True)
    async def draw(self) -> None:
        """Show page `self.at` of the chunk, drawing it in a thread the first time."""
        if not self.parts:
            self._say("This source has no PDF page to draw.")
            return
        part = self.parts[self.at]
        if self.at not in self.rendered:
            self._say(f"drawing page {one_line(part.label)}…")
            try:
                rendered = await self.workspace.page(self.source, part)
            except RagtuiError as exc:
                self._say(describe(exc), error=True)
                return
            self.rendered[self.at] = rendered
        if self.image is None or self.image[0] != self.at:
            from PIL import Image as PILImage

            self.image = (self.at, PILImage.open(io.BytesIO(self.rendered[self.at].png)).convert("RGB"))
        self.frame = None
        self._show()

    def _aspect(self) -> float:
        """The view's width over its height, in pixels."""
        size = self.query_one("#page-frame").content_size
        cell_w, cell_h = cell_pixels()
        return max(1, size.width) * cell_w / (max(1, size.height) * cell_h)

    def _default_frame(self, rendered: RenderedPage, aspect: float) -> Frame:
        boxes = [*rendered.chunk_boxes, *rendered.quote_boxes]
        if self.whole or not boxes:
            return fitted((0, 0, rendered.width, rendered.height), aspect)
        return fitted((min(b.x0 for b in boxes), min(b.y0 for b in boxes), max(b.x1 for b in boxes),
                       max(b.y1 for b in boxes)), aspect, BOX_MARGIN)

    def _show(self) -> None:
        rendered = self.rendered.get(self.at)
        if rendered is None or self.image is None or self.image[0] != self.at:
            return
        self.shown_in = self.query_one("#page-frame").content_size
        aspect = self._aspect()
        if self.frame is None:
            self.frame = self._default_frame(rendered, aspect)
        columns, rows = self.shown_in.width, self.shown_in.height
        cell_w, cell_h = (1, 2) if self.mode == "halfblock" else cell_pixels()
        boxes = [(b, CHUNK_COLOUR) for b in rendered.chunk_boxes] + [(b, QUOTE_COLOUR) for b in rendered.quote_boxes]
        picture = fitted_to_view(self.image[1], self.frame, aspect,
                                 (max(1, columns) * cell_w, max(1, rows) * cell_h), boxes)
        holder = self.query_one("#page-frame", Container)
        shown = holder.query("#page-image")
        if shown:
            shown.first().image = picture       # type: ignore[attr-defined]
        else:
            holder.mount(image_widget(self.mode, picture, id="page-image"))
        self._where(rendered)

    def _where(self, rendered: RenderedPage) -> None:
        part = rendered.part
        parts = [f"page {one_line(part.label)}"]
        if len(self.parts) > 1:
            parts.append(f"{self.at + 1} of the chunk's {len(self.parts)} pages (] / [)")
        if self.frame is not None:
            share = min(1.0, self.frame.width / rendered.width)
            parts.append("whole page" if self.whole else f"zoomed to the boxes ({share:.0%} of the page's width)")
        parts.append(f"{self.mode} graphics")
        text = Text(" · ".join(parts), style="dim")
        for note in rendered.notes:
            text.append(f"\n{clean(note)}", style="yellow")
        self.query_one("#page-where", Static).update(text)

    def _say(self, message: str, *, error: bool = False) -> None:
        self.query_one("#page-where", Static).update(Text(one_line(message), style="red" if error else "dim"))

    def on_resize(self, event: events.Resize) -> None:
        """A new shape of the view: the page fitted to it again (not on the first layout, which `draw` shows)."""
        if self.shown_in is not None and self.shown_in != self.query_one("#page-frame").content_size:
            self.frame = None
            self.call_after_refresh(self._show)

    # --- moving -------------------------------------------------------------------------------

    def action_fit(self) -> None:
        self.whole = not self.whole
        self.frame = None
        self._show()

    def action_zoom(self, step: int) -> None:
        rendered = self.rendered.get(self.at)
        if self.frame is None or rendered is None:
            return
        width = self.frame.width / ZOOM_STEP if step > 0 else self.frame.width * ZOOM_STEP
        width = min(max(width, MIN_WIDTH), 2 * max(rendered.width, rendered.height * self._aspect()))
        self.frame = Frame(self.frame.cx, self.frame.cy, width)
        self._show()

    def action_pan(self, dx: int, dy: int) -> None:
        rendered = self.rendered.get(self.at)
        if self.frame is None or rendered is None:
            return
        height = self.frame.width / self._aspect()
        cx = min(max(self.frame.cx + dx * PAN_STEP * self.frame.width, 0), rendered.width)
        cy = min(max(self.frame.cy + dy * PAN_STEP * height, 0), rendered.height)
        self.frame = Frame(cx, cy, self.frame.width)
        self._show()

    def action_page(self, step: int) -> None:
        if not 0 <= self.at + step < len(self.parts):
            self.notify("The chunk lies on no more pages that way." if len(self.parts) > 1
                        else "The chunk lies on this one page.")
            return
        self.at += step
        self.draw()

    # --- full size ----------------------------------------------------------------------------

    def action_full_size(self) -> None:
        """The page as drawn, at full resolution: under `ragtui serve`, handed to the browser, which opens it in a
        tab (Textual's `App.deliver_binary`, fetched from textual-serve's download route on the same guarded
        server); in a terminal, written to <data dir>/pages, saying where."""
        rendered = self.rendered.get(self.at)
        if rendered is None:
            self.notify("The page is not drawn yet.", severity="warning")
            return
        session = f"session{self.session_id}-" if self.session_id else ""
        name = _safe(f"ragtui-{session}source{self.source.number}-page{rendered.part.label}.png")
        if self.app.is_web:
            self.app.deliver_binary(io.BytesIO(rendered.png), save_filename=name, open_method="browser",
                                    mime_type="image/png")
            self.notify(f"Sent page {one_line(rendered.part.label)} at {rendered.width}x{rendered.height} pixels to "
                        "the browser, to open in a new tab.")
            return
        # deliver_binary in a terminal opens a BytesIO as text (textual 8.2, driver.deliver_binary): written here
        path = self.workspace.settings.data_dir / "pages" / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(rendered.png)
        except OSError as exc:
            self.notify(one_line(f"Cannot write {path}: {exc.strerror or exc}"), severity="error")
            return
        over_ssh = " (on the machine ragtui runs on: copy it with scp to see it)" if os.environ.get("SSH_CONNECTION") \
            else ""
        self.notify(one_line(f"Wrote page {rendered.part.label} at {rendered.width}x{rendered.height} pixels to "
                             f"{path}{over_ssh}"), timeout=10)

    def action_close(self) -> None:
        self.dismiss()


def _safe(name: str) -> str:
    """A file name made of letters, digits, dots and dashes only (a page label is the PDF's, untrusted)."""
    return re.sub(r"[^A-Za-z0-9.-]+", "-", name)
