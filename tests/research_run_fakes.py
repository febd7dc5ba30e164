"""The fake chat model of a research run (over the fake Ollama server's HTTP) and a retrieval stage that finds
the corpus's texts by the words they share with each search.

`ResearchModel` answers each kind of prompt the run sends: the plan, the gap check, an annotation (a quote of
the extract's first sentence; the cafeteria text is irrelevant) and the report (a cited sentence per kept
source). Its plan and gap replies are set per test: a good plan, junk, a gap reply that always asks for more.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ragtui.model.filters import SearchFilter
from ragtui.model.retrieval import CollectionMeta, Hit, KeywordMeta, Retrieval, RetrievalMeta
from tests.fake_ollama import Reply, fenced
from tests.research_helpers import make_chunk

CORPUS = [
    "In R, plot(x, y, log = \"y\") draws the y axis on a log scale.",
    "R labels a log scale axis with powers of ten by default.",
    "gnuplot sets a log scale with the command set logscale y.",
    "The default base of set logscale in gnuplot is 10.",
    "The cafeteria menu changes on Mondays, including the scale of portions.",
    "On a log axis gnuplot puts minor tics at each integer multiple by default.",
]
QUESTION = "How do the R and gnuplot manuals each handle log scales, and which defaults differ?"
PLAN = "1. How does R draw a log scale axis?\n2. How does gnuplot set a log scale?\n3. Which log scale defaults differ?"
_STOP = {"the", "how", "does", "and", "each", "which", "with", "what", "are", "a", "of", "on", "in", "is", "do",
         "at", "by", "set", "draw", "scale", "differ", "log"}


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 1 and w not in _STOP}


class WordRetrieval:
    """Each search's hits: the corpus texts sharing a word with it (beyond the common ones), most shared first,
    at most `most`; every call recorded."""

    def __init__(self, texts: Sequence[str] = CORPUS, most: int = 2) -> None:
        self.texts = list(texts)
        self.most = most
        self.calls: list[str] = []
        self.filters: list[SearchFilter | None] = []

    async def __call__(self, query: str, collections: Sequence[str], *,
                       search_filter: SearchFilter | None = None, strategies: bool = True) -> Retrieval:
        self.calls.append(query)
        self.filters.append(search_filter)
        asked = words(query)
        scored = sorted(((len(asked & words(t)), i) for i, t in enumerate(self.texts, start=1)
                         if asked & words(t)), key=lambda p: (-p[0], p[1]))[:self.most]
        hits = [Hit(chunk=make_chunk(i, self.texts[i - 1]), score=1.0 - rank / 10, rel_score=1.0 - rank / 10,
                    legs=("keyword",)) for rank, (_, i) in enumerate(scored)]
        meta = RetrievalMeta(collections={"docs": CollectionMeta(keyword=KeywordMeta(tier=1, kept=tuple(asked)))})
        return Retrieval(query=query, hits=hits, meta=meta)


class ResearchModel:
    """The fake server's responder for a research run's prompts; `plan` and `gaps` say what the plan and the gap
    check get (a function of the number of gap checks so far, for a model that never stops)."""

    def __init__(self, plan: str = PLAN, gaps: Callable[[int], str] = lambda n: "NONE",
                 report: Callable[[str], str] | None = None, slow: str = "") -> None:
        self.plan = plan
        self.gaps = gaps
        self.report = report or cite_every_source
        self.slow = slow           # annotations of extracts holding this word take 2 s a word
        self.gap_checks = 0
        self.plans = 0
        self.reports: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        if "Split the user's question into" in prompt:
            self.plans += 1
            return Reply.text(self.plan)
        if "You check a research plan" in prompt:
            self.gap_checks += 1
            return Reply.text(self.gaps(self.gap_checks))
        if "EXTRACT" in prompt:
            extract = fenced(prompt.split("EXTRACT:", 1)[1])
            if "cafeteria" in extract:
                return Reply.text("[IRRELEVANT!!!]")
            first = extract.split(". ")[0].rstrip(".")
            delay = 2.0 if self.slow and self.slow in extract else 0.0
            return Reply.text(f'"{first}." This is relevant to the question.', delay=delay)
        self.reports.append(prompt)
        return Reply.text(self.report(prompt))


def cite_every_source(prompt: str) -> str:
    """A report sentence per source of the prompt, quoting nothing, citing it."""
    numbers = re.findall(r"^\[(\d+)\] SOURCE:", prompt, flags=re.MULTILINE)
    return " ".join(f"Log scales are handled as described [{n}]." for n in numbers) or "Nothing was found."
