"""WordNet lexicons in ragtui's own data dir (`wn` keeps its database there, not in ~/.wn_data)."""

from __future__ import annotations

from pathlib import Path


class WordNetError(Exception):
    """Installing a lexicon failed; the message says why and what to do instead."""


def wordnet_dir(data_dir: Path) -> Path:
    return data_dir / "wordnet"


def _use(data_dir: Path):
    import wn

    wn.config.data_directory = wordnet_dir(data_dir)
    return wn


def installed(lexicon: str, data_dir: Path) -> bool:
    """True when `lexicon` ("id:version") is in the database; never creates one."""
    if not (wordnet_dir(data_dir) / "wn.db").exists():
        return False
    wn = _use(data_dir)
    return any(lex.specifier() == lexicon or lex.id == lexicon for lex in wn.lexicons())


def install(lexicon: str, data_dir: Path, from_file: Path | None = None) -> str:
    """Add the lexicon from a local WN-LMF file, or download it; returns what is now installed."""
    wordnet_dir(data_dir).mkdir(parents=True, exist_ok=True)
    wn = _use(data_dir)
    if from_file is not None:
        if not from_file.is_file():
            raise WordNetError(f"{from_file}: no such file")
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
