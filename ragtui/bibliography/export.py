"""The export formats of a session beside the Markdown: what `history export --format` and the TUI write."""

from __future__ import annotations

from ragtui.bibliography.references import MetadataLookup, references
from ragtui.bibliography.render import bibtex, csl_json
from ragtui.model.conversation import Conversation

FORMATS = ("markdown", "bibtex", "csl-json")
SUFFIXES = {"markdown": ".md", "bibtex": ".bib", "csl-json": ".csl.json"}


def bibliography(conversation: Conversation, fmt: str, lookup: MetadataLookup) -> str:
    """The session's cited documents as BibTeX or CSL-JSON (`render.bibtex`, `render.csl_json`), naming the .bib
    files that could not be read."""
    refs, citations = references(conversation, lookup)
    notes = list(dict.fromkeys(lookup.notes))
    if fmt == "bibtex":
        return bibtex(refs, citations, title=f"session {conversation.id}: {conversation.query}", notes=notes)
    return csl_json(refs, citations, notes=notes)


def quote_lines(conversation: Conversation) -> list[str]:
    """The Markdown section on the quotes each answer attributes to its sources, each with its verdict: verified,
    misattributed (another source holds it) or not found (`quotes.QuoteCheck.verdict`); nothing when no answer
    quotes."""
    from ragtui.llm.citations import quote_checks

    texts = {s.number: s.chunk.text for s in conversation.all_sources}
    lines: list[str] = []
    many = len(conversation.turns) > 1
    for index, turn in enumerate(conversation.turns, start=1):
        for check in quote_checks(turn.answer, texts):
            lines.append(f"- {'Turn ' + str(index) + ': ' if many else ''}“{' '.join(check.quote.split())}” "
                         f"— {check.verdict}")
    return ["## Quotes checked", "", *lines, ""] if lines else []
