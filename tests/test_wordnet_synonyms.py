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
