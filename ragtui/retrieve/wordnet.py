"""WordNet in ragtui's own data dir (`wn` keeps its database there, not in ~/.wn_data): install and synonyms."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ragtui import heavy
from ragtui.errors import RagtuiError
from ragtui.retrieve.senses import Sense, SenseVectors
from ragtui.sanitize import one_line

if TYPE_CHECKING:
    import wn

MAX_SENSES = 10   # senses of a word compared with the query: WordNet lists the frequent ones first ("run" has 57)


class WordNetError(RagtuiError):
    """Installing a lexicon failed; the message says why and what to do instead."""


class WordNetBusy(RagtuiError):
    """WordNet's database could not be read just now (locked while `ragtui wordnet install` writes it, or
    half written): synonyms are off for this query, and the next one asks again."""


@contextmanager
def _reading() -> Iterator[None]:
    """A read of wn's database; SQLite's "database is locked" (a writer holds it: SQLite lets no one read
    while a write commits, https://www.sqlite.org/lockingv3.html) or a schema still being written become
    WordNetBusy."""
    import sqlite3

    import wn

    try:
        yield
    except (sqlite3.Error, wn.Error) as exc:
        raise WordNetBusy(f"WordNet is busy ({one_line(str(exc))}; is `ragtui wordnet install` running?): synonyms "
                          "are off for this query") from None


def wordnet_dir(data_dir: Path) -> Path:
    return data_dir / "wordnet"


def _use(data_dir: Path):
    heavy.load("wn")
    import wn

    wn.config.data_directory = wordnet_dir(data_dir)
    wn.config.allow_multithreading = True   # keyword legs of several collections look synonyms up in threads
    return wn


def installed(lexicon: str, data_dir: Path) -> bool:
    """True when `lexicon` ("id:version") is in the database; never creates one. WordNetBusy when the
    database cannot be read now."""
    if not (wordnet_dir(data_dir) / "wn.db").exists():
        return False
    wn = _use(data_dir)
    with _reading():
        return any(lex.specifier() == lexicon or lex.id == lexicon for lex in wn.lexicons())


def install(lexicon: str, data_dir: Path, from_file: Path | None = None) -> str:
    """Add the lexicon from a local WN-LMF file, or download it; returns what is now installed."""
    if from_file is not None:
        try:
            usable = from_file.is_file()
        except (OSError, ValueError):           # a name too long, or one no file can have
            usable = False
        if not usable:
            raise WordNetError(f"{from_file}: no such file")
    wordnet_dir(data_dir).mkdir(parents=True, exist_ok=True)
    wn = _use(data_dir)
    if from_file is not None:
        try:
            wn.add(from_file, progress_handler=None)
        except Exception as exc:  # wn raises several types for unreadable or invalid LMF
            raise WordNetError(f"{from_file} is not a WN-LMF lexicon wn can load: {exc}") from None
    elif not installed(lexicon, data_dir):
        try:
            wn.download(lexicon, progress_handler=None)
        except Exception as exc:  # network errors surface as various wn/urllib types
            raise WordNetError(
                f"downloading {lexicon} failed ({exc}); offline, install it from a WN-LMF file: "
                "`ragtui wordnet install --from oewn-2024.xml.gz`"
            ) from None
    if not installed(lexicon, data_dir):
        have = ", ".join(lex.specifier() for lex in wn.lexicons()) or "none"
        raise WordNetError(f"{lexicon} is still not installed (installed: {have}); "
                           "check [synonyms] lexicon against the file's lexicon id:version")
    return lexicon


class SynonymLookup:
    """A word's senses from one installed lexicon, cached per word; synonyms from the first.

    `synonyms(word)` is the first synset (WordNet lists the most frequent sense
    first), the rule when nothing better is known; `senses.QuerySynonyms` chooses among `senses(word)`
    by the query's embedding. The case trap: `wn` matches case-insensitively by
    default and lists capitalised entries first, so "doctor" would open on "Doctor
    of the Church". Lookups here match the exact (lowercase) form first, with
    rule-based Morphy for inflections ("cars" -> "car"), and fall back to
    case-insensitive matching only for words that exist solely capitalised
    ("paris" -> "Paris").
    """

    def __init__(self, lexicon: str, data_dir: Path) -> None:
        heavy.load("wn")
        import wn
        import wn.morphy

        _use(data_dir)
        self.lexicon = lexicon
        self.data_dir = Path(data_dir)
        with _reading():
            self._exact = wn.Wordnet(lexicon, normalizer=None, lemmatizer=wn.morphy.Morphy())
            self._folded = wn.Wordnet(lexicon, lemmatizer=wn.morphy.Morphy())
        self._cache: dict[str, tuple[Sense, ...]] = {}
        self._first: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def senses(self, word: str) -> tuple[Sense, ...]:
        """The word's first MAX_SENSES synsets in WordNet order, each without the word itself."""
        with self._lock:
            if word not in self._cache:
                synsets = self._synsets(word)
                self._cache[word] = tuple(_sense(s, word) for s in synsets[:MAX_SENSES])
            return self._cache[word]

    def synonyms(self, word: str) -> list[str]:
        """Lemmas of the word's first synset, minus the word itself, in WordNet order.

        Reads the first synset's lemmas only: building every sense with its
        gloss (`senses`, for the sense choice) costs ~5x more per word, most of
        the keyword leg's OR tier at 100k chunks.
        """
        with self._lock:
            if word in self._cache:
                senses = self._cache[word]
                return list(senses[0].synonyms) if senses else []
            if word not in self._first:
                synsets = self._synsets(word)
                self._first[word] = _other_lemmas(synsets[0], word) if synsets else ()
            return list(self._first[word])

    def _synsets(self, word: str) -> list[wn.Synset]:
        _use(self.data_dir)   # wn's database path is global; another data dir may have taken it
        with _reading():
            return self._exact.synsets(word) or self._folded.synsets(word)

    def for_words(self, words: Sequence[str]) -> dict[str, list[str]]:
        """First-synset synonyms of each word (no embedding to choose a sense by)."""
        return {w: self.synonyms(w) for w in words}


def _other_lemmas(synset: wn.Synset, word: str) -> tuple[str, ...]:
    return tuple(lemma for lemma in dict.fromkeys(synset.lemmas()) if lemma.lower() != word.lower())


def _sense(synset: wn.Synset, word: str) -> Sense:
    lemmas = list(dict.fromkeys(synset.lemmas()))
    definition = synset.definition() or ""
    return Sense(id=synset.id, synonyms=_other_lemmas(synset, word),
                 text=f"{', '.join(lemmas)}: {definition}" if definition else ", ".join(lemmas))


def synonym_lookup(lexicon: str, data_dir: Path) -> SynonymLookup | None:
    """A lookup for an installed lexicon, or None when it is not installed (expansion off); WordNetBusy when the
    database cannot be read now."""
    return SynonymLookup(lexicon, data_dir) if installed(lexicon, data_dir) else None


class Lexicon:
    """The configured lexicon's lookup, opened once it is installed and then shared by every query.

    Until it is installed each query asks again, so `ragtui wordnet install` takes
    effect in a running app without a restart. It also owns the vectors of the
    senses compared with queries (`sense_vectors`), so a sense is embedded once per
    model for the Workspace's life.
    """

    def __init__(self, lexicon: str, data_dir: Path) -> None:
        self.lexicon = lexicon
        self.data_dir = Path(data_dir)
        self.sense_vectors = SenseVectors()
        self._lookup: SynonymLookup | None = None
        self._lock = threading.Lock()

    def lookup(self) -> SynonymLookup | None:
        with self._lock:
            if self._lookup is None:
                self._lookup = synonym_lookup(self.lexicon, self.data_dir)
            return self._lookup


def missing_lexicon_notice(lexicon: str) -> str:
    return (f"WordNet lexicon {lexicon} is not installed, so synonym expansion is off; "
            "install it with `ragtui wordnet install` (or `--from FILE` offline).")
