"""A web page's `<title>`, read from the page file itself for its bibliography entry (the ingest keeps the page's
main text, not its head)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from ragtui.bibliography.render import line

MAX_HEAD_BYTES = 256 * 1024       # the title sits in the head: a page is read this far, no further
MAX_TITLE_CHARS = 300


class _Title(HTMLParser):
    """The text of the first <title> element (a <title> inside an <svg> is an image's, not the page's)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.inside = False
        self.done = False
        self.svg = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.svg += tag == "svg"
        self.inside = tag == "title" and not self.svg and not self.done

    def handle_endtag(self, tag: str) -> None:
        self.svg -= tag == "svg" and self.svg > 0
        if tag == "title" and self.inside:
            self.inside, self.done = False, True

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.parts.append(data)


def page_title(path: Path) -> str:
    """The page's title on one line, "" when it has none or cannot be read."""
    from ragtui.errors import RagtuiError
    from ragtui.ingest.decoding import decode

    try:
        with path.open("rb") as f:
            text, _ = decode(f.read(MAX_HEAD_BYTES))
    except (OSError, RagtuiError):
        return ""
    parser = _Title()
    parser.feed(text)
    return line("".join(parser.parts))[:MAX_TITLE_CHARS]
