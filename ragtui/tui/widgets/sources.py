"""The sources pane: tabs Relevant / Filtered / All over the session's sources, plus the highlighted one in full.

Once an answer is being written, each source's number says how it went into
that answer (USE_STYLES): whole, as its most relevant part, or not at all
because it did not fit the context window; the detail line says it in words.

It keeps its own view of the (frozen) sources and replaces them only with what the
engine hands out: the sources an event carries, or a rescued or dropped source. The spinner of the sources
being annotated runs on a timer that runs only while one is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static, TabbedContent, TabPane, Tabs

from ragtui.model.citation_check import CitationState
from ragtui.model.conversation import AnnotationState, SessionSource, Standing, by_evidence
from ragtui.sanitize import clean, one_line, same_length
from ragtui.textfit import clip_line, shorten_middle, without_irrelevant_marker
from ragtui.tui.widgets.filter_bar import FilterBar, matches
from ragtui.tui.widgets.motions import MotionTable

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPIN_EVERY = 0.1         # seconds per spinner frame
TABS = (("relevant", "Relevant"), ("filtered", "Filtered"), ("all", "All"))
# Column widths; "annotation" takes what is left of the pane's width.
WIDE_COLUMNS = {"#": 3, "rel": 4, "collection": 10, "file": 26, "page": 4, "legs": 3, "state": 10, "annotation": 0}
NARROW_COLUMNS = {"#": 2, "rel": 4, "file": 18, "page": 4, "state": 10, "annotation": 0}
WIDE_FROM = 100
CHUNK_FROM_HEIGHT = 24       # a panel this tall shows the highlighted source's chunk text in its detail
TWO_LINES_FROM_HEIGHT = 30   # a wide panel this tall gives each annotation two lines
QUERY_WORD = re.compile(r"[^\W_]{3,}")
LEGS: dict[tuple[str, ...], str] = {("vector",): "V", ("keyword",): "K"}
# How a source went into the answer (ResearchSession.use_in_answer): the style of its number, and words.
USE_STYLES = {"whole": "bold reverse green", "window": "bold reverse cyan", "did not fit": "bold strike red"}
USE_WORDS = {"whole": "in the answer", "window": "in the answer: its most relevant part",
             "did not fit": "did not fit the context window: not in the answer"}


MISQUOTE_NOTE = "(quote not in this source) "
NO_QUOTE_NOTE = "no quote from this source (w shows the reply as written): "


# How the sources pane words a source's standing, and in which colour.
STANDING_WORDS = {Standing.RESCUED: ("rescued", "bold green"), Standing.DROPPED: ("dropped", "bold yellow"),
                  Standing.RELEVANT: ("relevant", "green"), Standing.NO_QUOTE: ("no quote", "yellow"),
                  Standing.IRRELEVANT: ("irrelevant", "yellow"),
                  Standing.FAILED: ("failed", "bold red"), Standing.OFF: ("-", "dim")}


# How a source the latest re-check found stale is marked (ragtui.citation_recheck), before its annotation.
STALE_STYLES = {CitationState.MOVED: "bold magenta", CitationState.CHANGED: "bold red", CitationState.GONE: "bold red"}


def stale_mark(source: SessionSource) -> Text | None:
    """`moved: ` / `changed: ` / `gone: ` in its colour for a stale citation; None otherwise."""
    check = source.citation
    if check is None or not check.stale:
        return None
    return Text(f"{check.state.value}: ", style=STALE_STYLES[check.state])


def state_text(source: SessionSource, frame: int = 0, running: bool = False) -> Text:
    """A short, coloured word for where the source stands (the spinner frame while annotating); a source
    without an annotation is "pending" while an annotation pass runs and "not annot." once none does."""
    standing = source.standing
    if standing is Standing.RUNNING:
        return Text(SPINNER[frame % len(SPINNER)] + " …", style="cyan")
    if standing is Standing.NOT_ANNOTATED:
        return Text("pending" if running else "not annot.", style="dim")
    word, style = STANDING_WORDS[standing]
    return Text(word, style=style)


def in_tab(source: SessionSource, tab: str) -> bool:
    if tab == "filtered":
        return source.filtered
    if tab == "relevant":
        return not source.filtered
    return True


class SourceTable(MotionTable):
    def __init__(self, tab: str, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.tab = tab


class SourcesPanel(Vertical):
    """Renders SessionSource objects: set_sources and put take what the engine's events carry."""

    @dataclass
    class SourceChosen(Message):
        """The user pressed enter on a source row: open it in the viewer."""

        source: SessionSource

    def __init__(self, irrelevant_marker: re.Pattern[str], **kwargs: Any) -> None:
        """`irrelevant_marker` (annotation.irrelevant_re) is shown as the state word "irrelevant", not as raw text."""
        super().__init__(**kwargs)
        self.irrelevant_marker = irrelevant_marker
        self.query_words: tuple[str, ...] = ()   # highlighted in the chunk text of the detail
        self.sources: dict[int, SessionSource] = {}
        self.use: dict[int, str] = {}        # number -> "whole" | "window" | "did not fit", for their answer
        self.wide = False
        self.note_width = 20
        self.row_lines = 1       # 2 on a wide, tall panel: each annotation gets two lines
        self.frame = 0
        self.empty_note = "No query yet. Press / to type one."
        self._spinner: Timer | None = None

    def compose(self) -> ComposeResult:
        yield FilterBar(id="source-filter")
        with TabbedContent(initial="relevant", id="source-tabs"):
            for tab, title in TABS:
                with TabPane(title, id=tab):
                    yield SourceTable(tab, id=f"{tab}-table")
        yield Static("", id="source-detail")

    def on_mount(self) -> None:
        # the tabs are switched by keys (1 2 3), so tab moves from the query bar straight to the rows
        self.query_one(Tabs).can_focus = False
        self._spinner = self.set_interval(SPIN_EVERY, self._tick, pause=True)
        self._columns()
        self._render_all()

    # --- feeding -------------------------------------------------------------------

    def set_sources(self, sources: Sequence[SessionSource], empty_note: str, use: Mapping[int, str]) -> None:
        """Show these sources, and how each went into their turn's answer (`use`, from the engine), replacing
        whatever was shown before."""
        self.sources = {s.number: s for s in sources}
        self.use = dict(use)
        self.empty_note = empty_note or "No sources."
        self._render_all()

    def clear(self, note: str) -> None:
        self.set_sources([], note, {})

    def set_use(self, whole: Sequence[int], windowed: Sequence[int], left_out: Sequence[int]) -> None:
        """Mark how each source went into the answer being written (from SynthesisStarted)."""
        self.use = {n: "did not fit" for n in left_out}
        self.use.update({n: "whole" for n in whole})
        self.use.update({n: "window" for n in windowed})
        self._render_all()

    def put(self, source: SessionSource) -> None:
        """Show `source` as the engine now reports it (a source of another turn than the one shown is ignored)."""
        if source.number in self.sources:
            self.sources[source.number] = source
            self._render_all()

    def start_filter(self) -> None:
        """Show the filter field and type into it: the tabs keep the sources holding every word typed."""
        self.query_one(FilterBar).open()

    def shown(self, source: SessionSource) -> bool:
        """Whether the filter keeps `source`: every word in its collection, file, page, heading, annotation or text."""
        meta = source.chunk.meta
        return matches(self.query_one(FilterBar).words, meta.collection, meta.source, meta.page, meta.heading,
                       source.annotation, source.error, source.chunk.text)

    @on(Input.Changed, "#source-filter")
    def _filtered(self, event: Input.Changed) -> None:
        event.stop()
        self._render_all()

    @on(FilterBar.Closed)
    def _filter_closed(self, event: FilterBar.Closed) -> None:
        event.stop()
        self._render_all()
        self.active_table.focus()

    def show_tab(self, tab: str) -> None:
        """Switch to Relevant, Filtered or All, keeping the focus on the rows when they had it."""
        had_focus = self.active_table.has_focus
        self.query_one(TabbedContent).active = tab
        if had_focus:
            self.screen.set_focus(self.active_table)     # at once: the keys typed next go to the new tab's rows

    def on_resize(self) -> None:
        self._show_detail()
        columns = WIDE_COLUMNS if self.size.width >= WIDE_FROM else NARROW_COLUMNS
        fixed = sum(columns.values()) + 2 * len(columns) + 2  # cell padding, scrollbar
        note_width = max(10, self.size.width - fixed)
        row_lines = 2 if columns is WIDE_COLUMNS and self.size.height >= TWO_LINES_FROM_HEIGHT else 1
        if (columns is WIDE_COLUMNS) != self.wide or (note_width, row_lines) != (self.note_width, self.row_lines):
            self.wide = columns is WIDE_COLUMNS
            self.note_width, self.row_lines = note_width, row_lines
            self._columns()
            self._render_all()

    @property
    def running(self) -> bool:
        return any(s.state is AnnotationState.RUNNING for s in self.sources.values())

    def _spin_while_running(self) -> None:
        if self._spinner is not None:
            (self._spinner.resume if self.running else self._spinner.pause)()

    def _tick(self) -> None:
        """Advance the spinner of the sources being annotated (cells only, no re-layout)."""
        self.frame += 1
        for table in self.query(SourceTable):
            for source in self.sources.values():
                if source.state is AnnotationState.RUNNING and str(source.number) in table.rows:
                    table.update_cell(str(source.number), "state", state_text(source, self.frame, True))

    # --- reading ---------------------------------------------------------------------

    @property
    def active_table(self) -> SourceTable:
        tab = self.query_one(TabbedContent).active or "relevant"
        return self.query_one(f"#{tab}-table", SourceTable)

    def selected(self) -> SessionSource | None:
        table = self.active_table
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.sources.get(int(key)) if key else None

    def counts(self) -> dict[str, int]:
        return {tab: sum(in_tab(s, tab) for s in self.sources.values()) for tab, _ in TABS}

    # --- drawing ---------------------------------------------------------------------

    def _columns(self) -> None:
        columns = WIDE_COLUMNS if self.wide else NARROW_COLUMNS
        for table in self.query(SourceTable):
            table.clear(columns=True)
            for name, width in columns.items():
                table.add_column(name, key=name, width=width or self.note_width)

    def _row(self, s: SessionSource, running: bool) -> list[Text | str]:
        meta = s.chunk.meta
        legs = LEGS.get(tuple(s.legs), "V+K" if s.legs else "-")
        note = s.error or self.annotation_text(s)
        mark = stale_mark(s)
        note_cell = Text(clip_line(note, self.row_lines * (self.note_width - 1) - 1 - len(mark or '')),
                         style="red" if s.error else ("dim" if s.filtered else ""))
        if mark:
            note_cell = Text.assemble(mark, note_cell)
        columns = WIDE_COLUMNS if self.wide else NARROW_COLUMNS
        room = columns["file"]
        cells: dict[str, Text | str] = {
            "#": Text(str(s.number), style=USE_STYLES.get(self.use.get(s.number, ""), "bold")),
            "rel": f"{s.rel_score:.2f}",
            "collection": Text(one_line(meta.collection)),       # Text: a name is never read as markup
            "file": Text(shorten_middle(one_line(meta.source), room)),
            "page": Text(_page_cell(one_line(meta.pages), one_line(meta.page), columns["page"])),
            "legs": legs,
            "state": state_text(s, self.frame, running),
            "annotation": note_cell,
        }
        return [cells[name] for name in columns]

    def annotation_text(self, source: SessionSource) -> str:
        """The annotation as a reader wants it: the irrelevance marker is the state word, not text; a quote the
        chunk does not hold is said to be one (`SessionSource.misquoted`), not shown as a real quote."""
        text = source.annotation
        if source.state is AnnotationState.IRRELEVANT:
            text = without_irrelevant_marker(text, self.irrelevant_marker)
        return (MISQUOTE_NOTE + text) if source.misquoted else text

    def _render_all(self) -> None:
        self._spin_while_running()
        ordered = by_evidence(self.sources.values())      # a relevant source with no quote after the quoted ones
        running = self.running
        for table in self.query(SourceTable):
            keep = None
            if table.row_count:
                keep = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
            table.clear()
            for source in ordered:
                if in_tab(source, table.tab) and self.shown(source):
                    table.add_row(*self._row(source, running), key=str(source.number), height=self.row_lines)
            if keep is not None and keep in table.rows:
                table.move_cursor(row=table.get_row_index(keep), animate=False)
        tabs = self.query_one(TabbedContent)
        counts = self.counts()
        kept = {tab: sum(in_tab(s, tab) and self.shown(s) for s in self.sources.values()) for tab, _ in TABS}
        for tab, title in TABS:
            count = f"{kept[tab]}/{counts[tab]}" if kept[tab] != counts[tab] else str(counts[tab])
            tabs.get_tab(tab).label = f"{title} {count}" if self.sources else title
        self._show_detail()

    def _show_detail(self) -> None:
        detail = self.query_one("#source-detail", Static)
        source = self.selected()
        if source is None:
            words = " ".join(self.query_one(FilterBar).words)
            note = self.empty_note if not self.sources else "Nothing in this tab."
            if self.sources and words:
                note = f"No source in this tab holds every word of the filter: {words}"
            detail.update(Text(note, style="dim"))
            return
        meta = source.chunk.meta
        text = Text()
        text.append(f"[{source.number}] {one_line(source.chunk.label)}", style="bold")
        if meta.heading:
            text.append(f" · {one_line(meta.heading)}", style="italic")
        text.append(f" · rel {source.rel_score:.2f} · {'+'.join(source.legs) or '-'}", style="dim")
        use = self.use.get(source.number)
        if use:
            text.append(f" · {USE_WORDS[use]}", style=USE_STYLES[use].replace("reverse ", ""))
        if source.citation is not None and source.citation.stale:
            text.append(f"\nthe document changed since: {source.citation.verdict}",
                        style=STALE_STYLES[source.citation.state])
        if source.error:
            text.append(f"\nannotation failed: {clean(source.error)}", style="red")
        elif source.state is AnnotationState.IRRELEVANT:
            text.append("\nirrelevant: ", style="yellow")
            text.append(" ".join(clean(self.annotation_text(source)).split()))
        elif source.standing is Standing.NO_QUOTE:
            text.append(f"\n{NO_QUOTE_NOTE}", style="yellow")
            text.append(" ".join(clean(self.annotation_text(source)).split()))
        elif source.annotation:
            text.append("\n" + " ".join(clean(self.annotation_text(source)).split()))
        if self.size.height >= CHUNK_FROM_HEIGHT:
            text.append("\n\n")
            text.append_text(self.chunk_text(source))
        detail.update(text)

    def chunk_text(self, source: SessionSource) -> Text:
        """The source's chunk text: when it is longer than what the annotator read, that window (the part
        most relevant to the query, llm.window) stands out and the rest is dim; the query's words are marked."""
        from ragtui.tui.engine_door import WINDOW_CHARS, best_window
        from ragtui.words import FUNCTION_WORDS

        text = same_length(source.chunk.text)     # inert, and the window's offsets still hold
        chunk = Text(text)
        query = " ".join(self.query_words)
        start, end = best_window(text, query, WINDOW_CHARS) if query else (0, len(text))
        if (start, end) != (0, len(text)):
            chunk.stylize("dim")
            chunk.stylize("not dim", start, end)
        words = [w for w in QUERY_WORD.findall(query) if w.lower() not in FUNCTION_WORDS]
        if words:
            chunk.highlight_regex(r"(?i)\b(" + "|".join(re.escape(w) for w in words) + r")\w*",
                                  style="bold reverse")
        return chunk

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_detail()

    @on(TabbedContent.TabActivated)
    def _tab_changed(self, event: TabbedContent.TabActivated) -> None:
        event.stop()
        self._show_detail()

    @on(DataTable.RowSelected)
    def _chosen(self, event: DataTable.RowSelected) -> None:
        event.stop()
        source = self.sources.get(int(event.row_key.value or 0))
        if source is not None:
            self.post_message(self.SourceChosen(source))


def _page_cell(pages: str, first: str, width: int) -> str:
    """A chunk's pages in the page column: `3-4`, or its first page and "+" when the range is wider than the
    column (`12+`; the detail line names the whole range)."""
    return pages if len(pages) <= width else f"{first}+"
