from __future__ import annotations

from ragtui.config import Settings
from ragtui.retrieve.wordnet import synonym_lookup
from tests.mini_wordnet import LEXICON


def test_first_synset_avoids_the_case_trap(wordnet_settings: Settings) -> None:
    lookup = synonym_lookup(LEXICON, wordnet_settings.data_dir)
    assert lookup is not None
    assert lookup.synonyms("doctor") == ["doc", "physician", "MD", "medico"]
    assert lookup.synonyms("toilet")[:2] == ["lavatory", "lav"]


def test_inflected_forms_and_unknown_words(wordnet_settings: Settings) -> None:
    lookup = synonym_lookup(LEXICON, wordnet_settings.data_dir)
    assert lookup is not None
    assert "purge" in lookup.synonyms("flushing")
    assert lookup.synonyms("qwertyuiop") == []


def test_missing_lexicon_gives_none(make_settings) -> None:
    settings = make_settings()
    assert synonym_lookup("oewn:2024", settings.data_dir) is None


def test_first_synset_path_equals_the_first_of_all_senses(wordnet_settings: Settings) -> None:
    """`synonyms()` reads only the first synset; it must give what `senses()[0]` gives, before and after."""
    words = ["doctor", "toilet", "flushing", "bank", "Paris", "paris", "qwertyuiop", "cars"]
    fast = synonym_lookup(LEXICON, wordnet_settings.data_dir)
    full = synonym_lookup(LEXICON, wordnet_settings.data_dir)
    assert fast is not None and full is not None
    first = {w: fast.synonyms(w) for w in words}
    expected = {w: list(senses[0].synonyms) if (senses := full.senses(w)) else [] for w in words}
    assert first == expected
    assert any(first.values())
    assert {w: fast.synonyms(w) for w in words} == first      # cached
    assert {w: full.synonyms(w) for w in words} == expected   # from the senses already read
