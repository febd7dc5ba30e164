"""A web page's main text and heading paths: the HTML half of extraction, on the standard library's parser."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

# Where a <pre> block opens and closes in the parser's text: private-use characters no page's text holds
# after `tidy` (which turns the block between them into a code fence).
PRE_OPEN = "\ue000pre"
PRE_CLOSE = "\ue000/pre"
CODE_CLASS = re.compile(r"(?:^|\s)(?:highlight|language|lang)-([\w+#.-]{1,30})(?:\s|$)")


@dataclass
class _Table:
    """An open <table>: cells opened in its current row, the depth of its open cell, and the segments that
    made each of its rows one line (" | " between cells, a space for a line break inside one), undone when
    it turns out to lay out the page."""

    cells: int = 0
    in_cell: int = 0
    joins: list[int] = field(default_factory=list)
    layout: bool = False


class HtmlText(HTMLParser):
    """Text of a page in segments, each marked as inside the main content or inside boilerplate.

    Main content is `<main>`, `role="main"` or `<article>` (Sphinx marks its body
    role=main); boilerplate is navigation, sidebars, headers and footers, by tag,
    ARIA role or a class/id such as Sphinx's "sphinxsidebar" and "footer". Headings
    h1-h6 are collected with their level for the heading paths. A list item starts
    with "- ", its first paragraph on that line. A data table's row is one
    line with its cells joined by " | " (paragraphs inside a cell do not break the row);
    a table whose cells hold headings, lists, code or tables lays out the page, and its
    cells stay blocks of their own;
    `<pre>` keeps its whitespace and becomes a fenced code block, in the language its
    class names (Sphinx's "highlight-python", "language-python").
    """

    SKIP = frozenset(("script", "style", "noscript", "template", "svg", "head"))
    BLOCK = frozenset(("p", "div", "br", "li", "tr", "table", "section", "article", "header", "footer", "h1",
                       "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "title", "ul", "ol", "dt", "dd", "hr",
                       "main", "nav", "aside", "dl", "figure", "figcaption", "caption"))
    # Blocks that make a table's cell part of the page's layout rather than a data cell.
    LAYOUT = frozenset(("h1", "h2", "h3", "h4", "h5", "h6", "table", "pre", "ul", "ol", "dl", "blockquote", "form",
                        "section", "article", "main", "nav", "aside", "header", "footer"))
    VOID = frozenset(("br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "param",
                      "source", "track", "wbr"))
    BOILER_TAGS = frozenset(("nav", "aside", "footer", "header", "form", "button"))
    BOILER_ROLES = frozenset(("navigation", "banner", "contentinfo", "complementary", "search"))
    BOILER_NAME = re.compile(r"(?:^|[\s_-])(?:sphinxsidebar\w*|sidebar|related|footer|navbar|nav|navigation|"
                             r"menu|breadcrumbs?|headerlink|skip-?link|cookie\w*|banner)(?:$|[\s_-])", re.I)

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool, bool, bool]] = []   # (tag, skip, main, boiler)
        self.segments: list[tuple[str, bool, bool]] = []      # (text, in main, in boilerplate)
        self.headings: list[tuple[int, str, bool, bool]] = []  # (level, title, in main, in boilerplate)
        self.heading: list[str] | None = None
        self.has_main = False
        self.tables: list[_Table] = []  # the open tables, innermost last
        self.pre = 0                    # depth of open pre
        self.lang = ""                  # the language of the next or current pre, from a class
        self.bullet = False             # a list item's "- " is out and its text not yet

    @property
    def in_cell(self) -> bool:
        """Inside a cell of the innermost open table."""
        return bool(self.tables and self.tables[-1].in_cell)

    def _state(self) -> tuple[bool, bool, bool]:
        skip = any(s[1] for s in self.stack)
        return skip, any(s[2] for s in self.stack), any(s[3] for s in self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if self.in_cell and tag in self.LAYOUT:
            self.tables[-1].layout = True
        if tag in ("td", "th"):
            self._cell_start()
        elif tag == "tr" and self.tables:
            self.tables[-1].cells = 0
        elif tag == "pre" and not self.pre:
            self._mark(f"\n{PRE_OPEN}{self._language(a) or self.lang}\n")
        elif lang := self._language(a):
            self.lang = lang
        if tag == "pre":
            self.pre += 1
        if tag == "table":
            self.tables.append(_Table())
        if tag in self.BLOCK:
            self._mark("\n")
        if tag == "li" and not self.pre:
            _, main, boiler = self._state()
            self.segments.append(("- ", main, boiler))
            self.bullet = True
        if tag in self.VOID:
            return
        main = tag in ("main", "article") or a.get("role") == "main"
        self.has_main = self.has_main or main
        boiler = (tag in self.BOILER_TAGS or a.get("role", "") in self.BOILER_ROLES
                  or bool(self.BOILER_NAME.search(f"{a.get('class', '')} {a.get('id', '')}")))
        if tag == "header" and any(st[2] for st in self.stack):
            boiler = False        # an article's own header holds its title
        self.stack.append((tag, tag in self.SKIP, main, boiler and not main))
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.heading = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "li":
            self.bullet = False
        if tag in self.BLOCK:
            self._mark("\n")
        if not any(s[0] == tag for s in self.stack):
            return
        if tag in ("td", "th") and self.in_cell:
            self.tables[-1].in_cell -= 1
        elif tag == "table" and self.tables:
            self._table_end(self.tables.pop())
        elif tag == "pre" and self.pre:
            self.pre -= 1
            if not self.pre:
                self._mark(f"\n{PRE_CLOSE}\n")
                self.lang = ""
        while self.stack:
            top = self.stack.pop()[0]
            if top == tag:
                break
        if self.heading is not None and len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            _, main, boiler = self._state()
            title = " ".join("".join(self.heading).split())
            if title:
                self.headings.append((int(tag[1]), title, main, boiler))
            self.heading = None

    def _mark(self, text: str) -> None:
        """A line break (a space inside a table cell, nothing inside pre, one between rows) or a pre marker,
        in any context."""
        if text == "\n" and self.bullet:
            return                             # the item's first block starts on its "- " line
        if text == "\n" and self.pre:
            return
        if text == "\n" and self.in_cell:
            self.tables[-1].joins.append(len(self.segments))
            text = " "
        elif text == "\n" and self.tables and self.segments and self.segments[-1][0] == "\n":
            return
        self.segments.append((text, True, False))

    def _cell_start(self) -> None:
        if not self.tables:
            return
        table = self.tables[-1]
        if table.cells and not table.in_cell:
            _, main, boiler = self._state()
            table.joins.append(len(self.segments))
            self.segments.append((" | ", main, boiler))
        table.cells += 1
        table.in_cell += 1

    def _table_end(self, table: _Table) -> None:
        """A table that lays out the page (headings, lists, code or tables in its cells) gets its line breaks
        back: its cells are blocks of the page, not the cells of one row."""
        if table.layout:
            for i in table.joins:
                _, main, boiler = self.segments[i]
                self.segments[i] = ("\n", main, boiler)

    @staticmethod
    def _language(attrs: dict[str, str]) -> str:
        m = CODE_CLASS.search(attrs.get("class", ""))
        return m.group(1) if m else ""

    def handle_data(self, data: str) -> None:
        skip, main, boiler = self._state()
        if skip:
            return
        data = data.replace("\ue000", "")     # the pre markers' character never comes from the page
        if self.tables and not self.in_cell and not data.strip():
            return                             # the layout between rows would put blank lines among them
        if self.bullet and data.strip():
            self.bullet = False
        if self.in_cell and not self.pre:
            data = " ".join(data.split()) and f" {' '.join(data.split())} "
        self.segments.append((data, main, boiler))
        if self.heading is not None and not boiler:
            self.heading.append(data)

    def main_text(self) -> tuple[str, list[tuple[int, str]]]:
        """The main content (or, without a main element, everything but boilerplate) and its headings
        as (offset, heading path) into that text."""
        for table in self.tables:       # left open by the page
            self._table_end(table)
        self.tables = []
        keep = [t for t, main, boiler in self.segments if not boiler and (main or not self.has_main)]
        text = tidy("".join(keep))
        offsets: list[tuple[int, str]] = []
        path: list[tuple[int, str]] = []
        cursor = 0
        for level, title, main, boiler in self.headings:
            if boiler or (self.has_main and not main):
                continue
            at = line_start_find(text, title, cursor)
            if at < 0:
                continue
            path = [(lv, t) for lv, t in path if lv < level] + [(level, title)]
            offsets.append((at, " > ".join(t for _, t in path)))
            cursor = at + len(title)
        return text, offsets


def line_start_find(text: str, line: str, start: int) -> int:
    """Offset of the first line at or after `start` that begins with `line`, or -1."""
    at = start
    while (at := text.find(line, at)) >= 0:
        if at == 0 or text[at - 1] == "\n":
            return at
        at += 1
    return -1


def tidy(text: str) -> str:
    """Runs of whitespace to one space and at most one blank line in a row; a `<pre>` block (between the
    parser's markers) keeps its lines as they are and becomes a code fence that its content cannot close."""
    out: list[str] = []
    code: list[str] | None = None
    lang = ""
    blank = True
    for line in text.splitlines():
        if code is None and line.startswith(PRE_OPEN):
            code, lang = [], line[len(PRE_OPEN):].strip()
        elif code is not None and line == PRE_CLOSE:
            body = "\n".join(code).strip("\n")
            if body.strip():
                longest = max((len(m) for m in re.findall(r"`{3,}", body)), default=2)
                fence = "`" * max(3, longest + 1)
                out.extend(([] if blank else [""]) + [f"{fence}{lang}", body.rstrip(), fence, ""])
                blank = True
            code = None
        elif code is not None:
            code.append(line.rstrip())
        else:
            tidied = " ".join(line.split())
            if tidied or not blank:
                out.append(tidied)
            blank = not tidied
    if code:
        out.extend(" ".join(line.split()) for line in code)
    return "\n".join(out).strip()
