"""Habits of real models that the fake servers can play back, one function per habit.

Each takes a chat request's body (the same JSON shape for the fake Ollama and the fake OpenAI-compatible
server) and returns the reply's text: `FakeOllama.responder = as_reply(habit)`, `FakeOpenAI.responder =
habit`. They come from running ragtui against a small instruct model (SmolLM2-135M-Instruct on
llama-cpp-python's server): what a model that does not behave actually sends.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.fake_ollama import Reply, default_responder, fenced

Habit = Callable[[dict[str, Any]], str]


def as_reply(habit: Habit) -> Callable[[dict[str, Any]], Reply]:
    """A habit as a fake Ollama responder."""
    return lambda body: Reply.text(habit(body))


def _prompt(body: dict[str, Any]) -> str:
    return str((body.get("messages") or [{}])[-1].get("content", ""))


def _extract(body: dict[str, Any]) -> str | None:
    """The fenced extract of an annotation prompt, or None for any other prompt."""
    prompt = _prompt(body)
    return fenced(prompt.split("EXTRACT:", 1)[1]) if "EXTRACT:" in prompt else None


def _default(body: dict[str, Any]) -> str:
    return "".join(default_responder(body).pieces)


def cites_after_full_stop(body: dict[str, Any]) -> str:
    """Each sentence of the answer quotes the start of one source and cites it after its full stop
    ('... "the quoted words". [3]'). Annotations quote their extract."""
    if _extract(body) is not None:
        return _default(body)
    blocks = re.findall(r"(?ms)^\[(\d+)\] SOURCE: .*?\n(?:ANNOTATION: .*?\n)?(<<<\n.*?\n>>>)$", _prompt(body))
    sentences = [f'Source {n} reads: "{" ".join(fenced(block).split()[:6])}". [{n}]' for n, block in blocks]
    return " ".join(sentences) or "The sources do not say."


def late_sentinel(body: dict[str, Any]) -> str:
    """The irrelevance sentinel after a sentence of explanation, then an apology."""
    if _extract(body) is None:
        return _default(body)
    return "The extract is about something else entirely.\n[IRRELEVANT!!!]\nSorry."


def echoes_instruction(body: dict[str, Any]) -> str:
    """The prompt's instruction line (sentinel included) repeated back, then a genuine quote."""
    extract = _extract(body)
    if extract is None:
        return _default(body)
    first = re.split(r"(?<=[.!?])\s", extract, maxsplit=1)[0][:160]
    return f'If no quote is relevant write only [IRRELEVANT!!!] and stop.\n"{first}" This answers the question.'


def restarts_when_continued(body: dict[str, Any]) -> str:
    """Asked to go on, the model starts the answer again from its opening (its first 13 words, "must"
    said as "should"), then goes on with new text. The first answer is `ANSWER`."""
    partial = next((str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "assistant"),
                   None)
    if partial is None:
        return ANSWER
    return " ".join(partial.split()[:13]).replace(" must ", " should ", 1) + " " + NEW_TEXT


ANSWER = ("Centrifugal pumps must be primed before they start [1]. A primed pump starts at about 3 bar of "
          "pressure, and the relief valve opens at 12 bar [2]. Running a pump dry wears its seals quickly.")
NEW_TEXT = "The level sensor trips the motor [1]."


LOOP_INTRO = "The pump starts at 3 bar [1].\n\n"
LOOP_PARAGRAPH = ("Running a pump dry wears its seals within minutes [2]. The manual asks for a check of the water "
                  "level before every start [2].")


def loops(body: dict[str, Any]) -> str:
    """The answer falls into a loop: one paragraph written ten times over (until max_tokens, in life)."""
    if _extract(body) is not None:
        return _default(body)
    return LOOP_INTRO + "\n\n".join([LOOP_PARAGRAPH] * 10)


def answers_without_quoting(body: dict[str, Any]) -> str:
    """An annotation with no quote: code for a function the extract never names, and a paraphrase."""
    if _extract(body) is None:
        return _default(body)
    return ("You can read the file with `csv.read_csv(path)`:\n```python\nrows = csv.read_csv('data.csv')\n```\n"
            "This is relevant because it shows how to load the data.")


LONG_PASSAGE = ("Running a pump dry wears its seals within minutes [2]. The manual asks for a check of the water level "
                "before every start, and for the relief valve to be tested once a month by a trained operator [2]. A "
                "pump that runs hot must be stopped at once and left to cool [3].")
# the words (the fake's pieces) of the intro and two and a half copies: where max_tokens cuts `loops_until_cut`
TWO_AND_A_HALF = len(LOOP_INTRO.split()) + len(LONG_PASSAGE.split()) * 5 // 2


def loops_until_cut(body: dict[str, Any]) -> str:
    """The answer falls into a loop of one ~40-word passage, written over and over; max_tokens (set to
    TWO_AND_A_HALF) cuts it two and a half copies in, before a third whole copy could be seen."""
    if _extract(body) is not None:
        return _default(body)
    return LOOP_INTRO + " ".join([LONG_PASSAGE] * 10)


PARAGRAPHS = ("Centrifugal pumps must be primed before they start [1].\n\n"
              "A primed pump starts at about 3 bar of pressure, and the relief valve opens at 12 bar [2].\n\n"
              "Running a pump dry wears its seals quickly [2].")
# the words of the first two paragraphs: where max_tokens cuts `repeats_last_paragraph`'s first answer
TWO_PARAGRAPHS = len(PARAGRAPHS.rsplit("\n\n", 1)[0].split())


def repeats_last_paragraph(body: dict[str, Any]) -> str:
    """Asked to go on, the model writes the answer's last paragraph again, its lines broken anew and in bold,
    then `NEW_TEXT`. The first answer is `PARAGRAPHS`."""
    partial = next((str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "assistant"),
                   None)
    if partial is None:
        return _default(body) if _extract(body) is not None else PARAGRAPHS
    last = partial.rstrip().rsplit("\n\n", 1)[-1]
    return "\n\n**" + last.replace(", and ", ",\nand ") + "**\n\n" + NEW_TEXT


def echoes_source_header(body: dict[str, Any]) -> str:
    """Instead of an answer, the prompt's first source header, its ANNOTATION line and the start of its text,
    copied (what a small model often writes; mini_ollama's `echo` model does the same). Annotations quote."""
    if _extract(body) is not None:
        return _default(body)
    prompt = _prompt(body)
    start = re.search(r"(?m)^\[\d+\] SOURCE:", prompt)
    return " ".join(prompt[start.start() if start else 0:][:400].split())


NON_ANSWER = "The source is [1] and the other two are [2] and [3]."


def lists_source_numbers(body: dict[str, Any]) -> str:
    """An answer that names the sources by number and says nothing they say. Annotations quote."""
    return _default(body) if _extract(body) is not None else NON_ANSWER


def _first_lines(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(number, first line of its text) for each source block of a synthesis prompt."""
    blocks = re.findall(r"(?ms)^\[(\d+)\] SOURCE: .*?\n(?:ANNOTATION: .*?\n)?(<<<\n.*?\n>>>)$", _prompt(body))
    return [(n, fenced(block).strip().splitlines()[0]) for n, block in blocks]


def changes_a_number(body: dict[str, Any]) -> str:
    """Each source's first line restated and cited, its first percentage two points off ("85%" becomes "87%")
    and a number of millions written with the scale word ("1,500,000" becomes "1.5 million")."""
    if _extract(body) is not None:
        return _default(body)

    def restated(line: str) -> str:
        line = re.sub(r"(\d+)%", lambda m: f"{int(m.group(1)) + 2}%", line, count=1)
        return re.sub(r"\b(\d{1,3}),(\d)\d\d,000\b", r"\1.\2 million", line).rstrip(".")

    return " ".join(f"{restated(line)} [{n}]." for n, line in _first_lines(body)) or "The sources do not say."


def misattributes_quotes(body: dict[str, Any]) -> str:
    """Each source's opening words quoted and cited to the source before it in the prompt (the first source's
    to the last): every quote is real, and every citation wrong."""
    if _extract(body) is not None:
        return _default(body)
    lines = _first_lines(body)
    return " ".join(f'Source {n} reads "{" ".join(line.split()[:6])}" [{n}].'
                    for (n, _), (_, line) in zip(lines, lines[1:] + lines[:1], strict=True)) or "No sources."
