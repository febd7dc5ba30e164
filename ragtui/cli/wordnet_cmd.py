"""`ragtui wordnet install [--from FILE]`: put the configured lexicon in ragtui's data dir."""

from __future__ import annotations

import argparse
from pathlib import Path

from ragtui.config import Settings


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("wordnet", help="install the WordNet lexicon used for synonym expansion")
    cmds = parser.add_subparsers(dest="wordnet_command", metavar="ACTION", required=True)
    inst = cmds.add_parser("install", help="download the lexicon, or add it from a local WN-LMF file")
    inst.add_argument("--from", dest="from_file", type=Path, metavar="FILE",
                      help="a WN-LMF XML file (.xml or .xml.gz) to add instead of downloading")
    inst.set_defaults(run=run_install)


def run_install(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.retrieve.wordnet import install

    lexicon = settings.synonyms.lexicon
    print(f"installing {lexicon} into {settings.data_dir / 'wordnet'} (this can take a minute)...")
    install(lexicon, settings.data_dir, args.from_file)
    print(f"{lexicon} installed.")
    return 0
