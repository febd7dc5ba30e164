"""A tiny WN-LMF lexicon for tests: installing the real OEWN takes ~25 s, this takes milliseconds."""

from __future__ import annotations

from pathlib import Path

LEXICON = "mini-wn:1"

# (synset id, part of speech, lemmas in sense order). "Doctor" (capitalised) comes first,
# as in OEWN, to reproduce the case trap of ../shared/data/wordnet/README.md.
SYNSETS = [
    ("s-church-doctor", "n", ["Doctor", "Doctor of the Church"]),
    ("s-doctor", "n", ["doctor", "doc", "physician", "MD", "medico"]),
    ("s-car", "n", ["car", "auto", "automobile", "machine", "motorcar"]),
    ("s-toilet", "n", ["toilet", "lavatory", "lav", "can", "john", "privy", "bathroom"]),
    ("s-flush", "v", ["flush", "purge", "scour"]),
    ("s-control", "n", ["control", "command"]),
    ("s-big", "a", ["big", "large"]),
]


def write_lmf(path: Path) -> Path:
    entries, synsets = [], []
    for sid, pos, lemmas in SYNSETS:
        synsets.append(f'    <Synset id="mini-{sid}" ili="" partOfSpeech="{pos}"/>')
        for lemma in lemmas:
            eid = "mini-" + lemma.replace(" ", "_") + f"-{pos}-{sid}"
            entries.append(
                f'    <LexicalEntry id="{eid}">\n'
                f'      <Lemma writtenForm="{lemma}" partOfSpeech="{pos}"/>\n'
                f'      <Sense id="{eid}-s" synset="mini-{sid}"/>\n'
                f"    </LexicalEntry>"
            )
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
