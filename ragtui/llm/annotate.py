"""Per-source annotation: one LLM call per source, a quote and why it is relevant, or the irrelevance marker.

The prompt is `DEFAULT_PROMPT` (or a custom template with the same two tokens),
CONTENT is the chunk's most relevant 1,200 characters for the query, fenced like every
document text in a prompt (`fencing.fence`, explained in a system message), so an extract
cannot pose as instructions or as another source
(`window.best_window`, the part packing sends when the whole does not fit and
the source viewer highlights, rather than the first 1,200) and QUERY what the user asked
(`Conversation.annotation_query`). Calls run at most `annotation.concurrency` at a time and
report in completion order; one failed call marks only its own source failed, and a call the
server cut is asked again (`annotate_sources`).
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragtui.config import ConfigError
from ragtui.errors import describe
from ragtui.llm.chat import CallDropped, ChatModel, LLMError, Unreachable
from ragtui.llm.fencing import FENCE_RULE, fence, fold_line, unfence
from ragtui.llm.retries import Retrying, gave_up
from ragtui.llm.window import WINDOW_CHARS, best_window
from ragtui.paths import UnreadableFile, read_small_text, user_path
from ragtui.quotes import occurs
from ragtui.retry import Backoff

DEFAULT_PROMPT = (
    "Write at least one quote from the EXTRACT following this sentence,\n"
    "and after the quote detail why that quote is relevant to '''QUERY'''.\n"
    "If no quote is relevant write only [IRRELEVANT!!!] and stop.\n"
    "Here is the EXTRACT: CONTENT"
)
SYSTEM_PROMPT = "You annotate one extract of a document for a research question. " + FENCE_RULE
TOKENS = ("CONTENT", "QUERY")
_TOKEN = re.compile(r"CONTENT|QUERY")


def load_template(prompt_file: str | Path | None) -> str:
    """The default prompt, or the custom one checked for both tokens (ConfigError naming file and key)."""
    if not prompt_file:
        return DEFAULT_PROMPT
    try:
        template = read_small_text(user_path(prompt_file))
    except UnreadableFile as exc:
        raise ConfigError(f"config error: annotation.prompt_file = {str(prompt_file)!r}: {exc}") from None
    missing = [t for t in TOKENS if t not in template]
    if missing:
        raise ConfigError(f"config error: annotation.prompt_file = {str(prompt_file)!r}: the template lacks "
                          f"the token{'s' if len(missing) > 1 else ''} {' and '.join(missing)} "
                          "(it must contain both CONTENT and QUERY)")
    return template


def build_prompt(template: str, text: str, query: str) -> str:
    """Fill both tokens in one pass, so a query or chunk that contains "CONTENT"/"QUERY" is left alone.

    CONTENT is the window of `text` around its best match for the query, fenced on lines of its own.
    """
    start, end = best_window(text, query, WINDOW_CHARS)
    values = {"CONTENT": "\n" + fence(text[start:end]), "QUERY": query}
    return _TOKEN.sub(lambda m: values[m.group()], template)


_WRAPPING = " \t\r\n[](){}<>\"'`*_“”‘’«»"
_QUOTED = re.compile(r'"[^"]*(?:"|$)|“[^”]*(?:”|$)|«[^»]*(?:»|$)|`[^`]*(?:`|$)|\'\'\'.*?(?:\'\'\'|$)', re.DOTALL)
_FENCED = re.compile(r"^[ \t]*```.*?(?:^[ \t]*```[ \t]*$|\Z)|^<<<$.*?(?:^>>>$|\Z)", re.DOTALL | re.MULTILINE)
_BLOCKQUOTE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_WORD = re.compile(r"\w+")
_ECHO_WORDS = 4     # an instruction line this long, echoed whole, is an echo; a shorter one could be a verdict


def is_irrelevant(answer: str, marker: re.Pattern[str], template: str = DEFAULT_PROMPT) -> bool:
    """The model's verdict anywhere in its reply, never the text it quotes or the prompt it echoes.

    The irrelevance marker (annotation.irrelevant_re with its flags) is searched in the whole reply, less what
    is not the model's own word: quoted spans ("...", “...”, «...», `...`, between triple single quotes), block
    quotes (lines starting with ">"), fenced blocks (``` or the prompt's <<< >>> fence), and an echo of a line
    of `template` that holds the marker ("If no quote is relevant write only [IRRELEVANT!!!] and stop." repeated
    back is not a verdict; a marker beyond the ones that line holds is). A source whose own text contains the
    marker gets quoted with it, and that must not filter it. A bare marker as the first line counts even in
    quotation marks or brackets (nobody quotes a bare marker as evidence).
    """
    text = _FENCED.sub(_blank, answer)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if _full(marker, first.strip(_WRAPPING)):
        return True
    own = _QUOTED.sub(_blank, _BLOCKQUOTE.sub("", text))
    echoes = [(quote, len(marker.findall(line))) for line in template.splitlines()
              if marker.search(line) and len(_WORD.findall(quote := _TOKEN.sub(" ... ", marker.sub(" ... ", line))))
              >= _ECHO_WORDS]
    lines = []
    for line in own.splitlines():
        for quote, held in echoes:
            if occurs(quote, line):
                line = marker.sub(" ", line, count=held)
        lines.append(line)
    own = "\n".join(lines)
    return marker.search(own) is not None or any(_full(marker, line.strip(" []*_")) for line in lines)


def _blank(match: re.Match[str]) -> str:
    """What a span that is not the model's own word leaves behind: its line breaks."""
    return " " + "\n" * match.group().count("\n")


def _full(marker: re.Pattern[str], text: str) -> bool:
    return bool(text) and (marker.fullmatch(text) is not None or marker.fullmatch(text.rstrip(".")) is not None)


@dataclass(frozen=True)
class Started:
    """A call for source [number] went out."""

    number: int


@dataclass(frozen=True)
class Answered:
    """The model's answer for source [number], and its verdict (`is_irrelevant`)."""

    number: int
    text: str
    relevant: bool


@dataclass(frozen=True)
class Failed:
    number: int
    error: str


@dataclass(frozen=True)
class Retried:
    """The call for source [number] was cut and goes again, alone (`retry` says when and why)."""

    number: int
    retry: Retrying


@dataclass(frozen=True)
class Lowered:
    """Calls were cut while others were in flight, more than once: from now on `to` (was `was`) at a time."""

    was: int
    to: int


Progress = Started | Answered | Failed | Retried | Lowered
CUTS_BEFORE_LOWERING = 2    # cuts while others were in flight that make the calls go one at a time


def system_prompt(topic: str = "") -> str:
    """The annotator's instructions; `topic`, what the extract's collection is about (its `--topic`), when it
    has one: the annotator judges relevance knowing the field the question is asked in."""
    return SYSTEM_PROMPT + (f" The extract comes from a collection about: {fold_line(topic)}." if topic else "")


async def annotate_one(model: ChatModel, prompt: str, topic: str = "") -> str:
    """The model's whole answer to one annotation prompt; an empty answer is a failure."""
    text, _ = await model.complete([("system", system_prompt(topic)), ("user", prompt)])
    if not text.strip():
        raise LLMError(f"{model.model} returned an empty annotation")
    return text.strip()


@dataclass(frozen=True)
class _Cut:
    """The call for source [number] was cut (CallDropped) at its `attempt`-th try; `crowded`: its stream was cut
    while others were in flight (a refused connection is not a cut)."""

    number: int
    text: str
    attempt: int
    error: CallDropped
    crowded: bool


async def annotate_sources(
    model: ChatModel,
    items: Sequence[tuple[int, str]],
    *,
    query: str,
    template: str,
    irrelevant_marker: re.Pattern[str],
    concurrency: int,
    backoff: Backoff,
    topics: Mapping[int, str] | None = None,
) -> AsyncGenerator[Progress, None]:
    """Annotate (number, text) items, yielding each call's start and its outcome as it completes; `topics`
    gives, by number, what the item's collection is about (`system_prompt`).

    At most `concurrency` calls are in flight; results arrive in completion order, and any failure of one
    call becomes `Failed` for that number only. A call the server cut (`CallDropped`: a server that answers
    one request at a time may cut the running stream when the next arrives, as llama-cpp-python's does) is
    asked again from scratch, at most `backoff.attempts` tries in all: first alone, once no other call is in
    flight and before any new one starts, then alone after backoff.pause(1), pause(2)... Each retry is
    `Retried`. After CUTS_BEFORE_LOWERING cuts while others were in flight the calls go one at a time
    (`Lowered`, once). Closing the iterator cancels the calls still running.
    """
    queue: asyncio.Queue[Started | Answered | Failed | _Cut] = asyncio.Queue()
    waiting = deque(items)
    again: deque[tuple[int, str, int]] = deque()       # (number, text, attempt) to retry alone
    running: dict[int, asyncio.Task[None]] = {}
    limit, cut_crowded = concurrency, 0

    async def one(number: int, text: str, attempt: int, pause: float) -> None:
        await asyncio.sleep(pause)
        if attempt == 1:
            queue.put_nowait(Started(number))
        try:
            answer = await annotate_one(model, build_prompt(template, text, query), (topics or {}).get(number, ""))
        except CallDropped as exc:
            queue.put_nowait(_Cut(number, text, attempt, exc,
                                  crowded=len(running) > 1 and not isinstance(exc, Unreachable)))
        except Exception as exc:   # an LLMError, or a bug that must not leave the queue waiting
            queue.put_nowait(Failed(number, describe(exc)))
        else:
            queue.put_nowait(Answered(number, unfence(answer), not is_irrelevant(answer, irrelevant_marker, template)))

    def launch() -> None:
        if again:
            if not running:     # a retry goes alone
                number, text, attempt = again.popleft()
                running[number] = asyncio.create_task(one(number, text, attempt, backoff.pause(attempt - 2)))
            return
        while waiting and len(running) < limit:
            number, text = waiting.popleft()
            running[number] = asyncio.create_task(one(number, text, 1, 0.0))

    try:
        launch()
        while running:
            event = await queue.get()
            if isinstance(event, Started):
                yield event
                continue
            running.pop(event.number)
            if isinstance(event, _Cut):
                cut_crowded += event.crowded
                if limit > 1 and cut_crowded >= CUTS_BEFORE_LOWERING:
                    yield Lowered(limit, 1)
                    limit = 1
                if event.attempt < backoff.attempts:
                    again.append((event.number, event.text, event.attempt + 1))
                    yield Retried(event.number, Retrying(str(event.error), event.attempt + 1, backoff.attempts,
                                                         backoff.pause(event.attempt - 1), alone=True))
                else:
                    yield Failed(event.number, str(gave_up(event.error, event.attempt)))
            else:
                yield event
            launch()
    finally:
        for task in running.values():
            task.cancel()
        await asyncio.gather(*running.values(), return_exceptions=True)
