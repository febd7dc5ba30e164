"""The synthesis pane: the answer streamed token by token, then re-rendered with its citations as links.

Tokens go through Markdown.get_stream (which batches writes when rendering lags);
when the answer is complete, every [N] that names a source becomes a link that
opens that source, and a banner says how the answer stopped.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from ragtui.model.conversation import SessionSource
from ragtui.numbers import NumberCheck
from ragtui.quotes import QuoteCheck
from ragtui.sanitize import clean, one_line
from ragtui.tui.engine_door import citation_spans, cited_numbers

UNVERIFIED_MARK = "*(quote not in this source)*"
STOP_NOTES = {
    "length": ("warning", "The answer was cut off at llm.max_tokens. Press c to continue it."),
    "cancelled": ("warning", "Cancelled. Press s to synthesize again, R to re-annotate."),
    "error": ("error", "Synthesis failed."),
    "repetition": ("warning", "Stopped: the answer began repeating itself; the repeats were dropped. Not offered "
                              "for continue (it would loop again): press s to synthesize again."),
}
# A cancelled answer that Continue can extend (`Turn.can_continue`) says so.
CANCELLED_PARTIAL = "Cancelled. Press c to continue the answer, s to synthesize it again."
UNCITED_NOTE = "The answer cites no source [N]: nothing in it is tied to a source; check it against the sources."
ECHO_NOTE = ("The answer is mostly text copied from the prompt (source headers, source text, the question): it "
             "answers nothing, and a [N] inside the copy is not a citation.")
NON_ANSWER_NOTE = "The answer only names sources ([N]) and says nothing they say: it is not an answer."


def linkify_citations(text: str, known: Collection[int], unverified: Collection[int] = ()) -> str:
    """Turn each citation naming a known source into one `cite:N` link per number; leave the rest as they are.

    The engine's parser finds the citations, so the links are the ones the engine counted. A citation whose
    quote its source does not hold (its start in `unverified`) is marked as such right after it.
    """
    def one(n: int) -> str:
        return f"[\\[{n}\\]](cite:{n})" if n in known else f"[{n}]"

    pieces: list[str] = []
    done = 0
    for span in citation_spans(text):
        mark = f" {UNVERIFIED_MARK}" if span.start in unverified else ""
        if any(n in known for n in span.numbers) or mark:
            pieces += [text[done:span.start], "".join(one(n) for n in span.numbers) + mark]
            done = span.end
    return "".join(pieces) + text[done:]


class SynthesisView(VerticalScroll):
    @dataclass
    class CitationClicked(Message):
        """A citation [N] in the answer was clicked."""

        number: int

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.text = ""
        self._stream: MarkdownStream | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="synthesis-banner")
        yield Markdown("", id="answer", open_links=False)

    def on_mount(self) -> None:
        self.note("The answer appears here, with its sources cited as [N].", "info")

    @property
    def markdown(self) -> Markdown:
        return self.query_one("#answer", Markdown)

    def note(self, message: str, level: str = "info") -> None:
        """A line above the answer: why there is none, or how it stopped."""
        banner = self.query_one("#synthesis-banner", Static)
        style = {"info": "dim", "warning": "bold yellow", "error": "bold red"}[level]
        banner.update(Text(clean(message), style=style))
        banner.display = bool(message)

    async def reset(self, message: str = "") -> None:
        await self.stop_stream()
        self.text = ""
        await self.markdown.update("")
        self.note(message)

    async def begin(self, model: str, continuation: bool) -> None:
        """Open a token stream; a continuation appends to the answer shown so far."""
        await self.stop_stream()
        if not continuation:
            self.text = ""
        await self.markdown.update(clean(self.text))
        self.note(f"{'Continuing' if continuation else 'Writing'} with {model} …", "info")
        self._stream = Markdown.get_stream(self.markdown)

    async def write(self, token: str) -> None:
        token = clean(token)     # no ESC passes, so no sequence can form across tokens
        self.text += token
        if self._stream is None:
            self._stream = Markdown.get_stream(self.markdown)
        await self._stream.write(token)
        if not self.is_anchored and self.max_scroll_y > 0:
            self.anchor()  # follow the stream once it overflows (anchoring earlier bottom-aligns short text)

    async def stop_stream(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()

    async def finish(self, text: str, stop_reason: str, known: set[int], unknown: tuple[int, ...] = (),
                     quotes: tuple[QuoteCheck, ...] = (), error: str = "", *, uncited: bool = False,
                     echo: bool = False, non_answer: bool = False, continuable: bool = False,
                     numbers: tuple[NumberCheck, ...] = ()) -> None:
        """The complete answer: re-render with citation links and say how it stopped (`error`: why it failed;
        `continuable`: a cancelled answer that Continue extends), whether it is an echo of the prompt or a
        non-answer, whether it cites nothing (`uncited`), what it misquotes and the numbers its cited sources do
        not hold (`numbers`)."""
        await self.stop_stream()
        self.text = text
        unverified = [q for q in quotes if not q.verified]
        await self.markdown.update(clean(linkify_citations(text, known, {q.cite_at for q in unverified})))
        self.anchor(False)
        level, message = STOP_NOTES.get(stop_reason, ("info", ""))
        if stop_reason == "cancelled" and continuable:
            message = CANCELLED_PARTIAL
        if stop_reason == "error" and error:
            message = f"{message.removesuffix('.')}: {one_line(error)}"
        warnings = [note for failed, note in ((echo, ECHO_NOTE), (non_answer, NON_ANSWER_NOTE),
                                              (uncited, UNCITED_NOTE)) if failed]
        if unknown:
            cited = ", ".join(f"[{n}]" for n in unknown)
            warnings.append(f"The answer cites {cited}, which is not among the sources.")
        if unverified:
            verdicts = list(dict.fromkeys(q.verdict for q in unverified))
            more = f"; and {len(verdicts) - 3} more" if len(verdicts) > 3 else ""
            warnings.append(f"{len(unverified)} quote(s) not in the source cited (marked in the answer): "
                            f"{'; '.join(verdicts[:3])}{more}.")
        if numbers:
            shown = list(dict.fromkeys(n.verdict for n in numbers))
            more = f"; and {len(shown) - 3} more" if len(shown) > 3 else ""
            warnings.append(f"{len(numbers)} number(s) not in the source cited: {'; '.join(shown[:3])}{more}.")
        if warnings:                  # each check that found something adds its sentence; any makes it a warning
            message = " ".join([message, *warnings]).strip()
            level = "warning" if level == "info" else level
        self.note(message, level)

    @on(Markdown.LinkClicked)
    def _link(self, event: Markdown.LinkClicked) -> None:
        event.stop()
        if event.href.startswith("cite:"):
            self.post_message(self.CitationClicked(int(event.href.removeprefix("cite:"))))


def answer_with_sources(answer: str, sources: Mapping[int, SessionSource]) -> str:
    """The answer followed by the numbered list of the sources it cites, so a pasted [N] still resolves."""
    cited = [n for n in cited_numbers(answer) if n in sources]
    if not cited:
        return answer
    listing = "\n".join(f"[{n}] {sources[n].chunk.label}" for n in sorted(cited))
    return f"{answer.rstrip()}\n\nSources:\n{listing}\n"
