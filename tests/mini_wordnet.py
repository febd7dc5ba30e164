"""A tiny WN-LMF lexicon for tests: installing the real OEWN takes ~25 s, this takes milliseconds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

LEXICON = "mini-wn:1"

# (synset id, part of speech, lemmas in sense order[, gloss]). "Doctor" (capitalised) comes first,
# as in OEWN, to reproduce the case trap of ../shared/data/wordnet/README.md. "bank" has two senses,
# the river one first, for sense choice by the query's embedding.
SYNSETS: list[tuple[Any, ...]] = [
    ("s-church-doctor", "n", ["Doctor", "Doctor of the Church"]),
    ("s-doctor", "n", ["doctor", "doc", "physician", "MD", "medico"]),
    ("s-car", "n", ["car", "auto", "automobile", "machine", "motorcar"]),
    ("s-toilet", "n", ["toilet", "lavatory", "lav", "can", "john", "privy", "bathroom"]),
    ("s-flush", "v", ["flush", "purge", "scour"]),
    ("s-control", "n", ["control", "command"]),
    ("s-big", "a", ["big", "large"]),
    ("s-bank-river", "n", ["bank", "riverbank", "riverside"], "sloping land beside a river or stream"),
    ("s-bank-money", "n", ["bank", "depository", "lender"],
     "a financial institution that accepts deposits and lends money"),
]


def write_lmf(path: Path) -> Path:
    """One lexical entry per (lemma, part of speech) with its senses in SYNSETS order, then the synsets."""
    senses: dict[tuple[str, str], list[str]] = {}
    synsets = []
    for sid, pos, lemmas, *gloss in SYNSETS:
        definition = f"<Definition>{gloss[0]}</Definition>" if gloss else ""
        synsets.append(f'    <Synset id="mini-{sid}" ili="" partOfSpeech="{pos}">{definition}</Synset>')
        for lemma in lemmas:
            senses.setdefault((lemma, pos), []).append(sid)
    entries = []
    for (lemma, pos), sids in senses.items():
        eid = "mini-" + lemma.replace(" ", "_") + f"-{pos}"
        sense_lines = "".join(f'      <Sense id="{eid}-{sid}" synset="mini-{sid}"/>\n' for sid in sids)
        entries.append(f'    <LexicalEntry id="{eid}">\n'
                       f'      <Lemma writtenForm="{lemma}" partOfSpeech="{pos}"/>\n'
                       f"{sense_lines}    </LexicalEntry>")
    body = "\n".join(entries + synsets)
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE LexicalResource SYSTEM "http://globalwordnet.github.io/schemas/WN-LMF-1.0.dtd">\n'
        '<LexicalResource xmlns:dc="https://globalwordnet.github.io/schemas/dc/">\n'
        '  <Lexicon id="mini-wn" label="Mini WordNet" language="en" email="t@example.org"\n'
        '           license="https://creativecommons.org/licenses/by/4.0/" version="1">\n'
        f"{body}\n  </Lexicon>\n</LexicalResource>\n",
        encoding="utf-8",
    )
    return path
