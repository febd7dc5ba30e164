"""The demo corpus shipped with ragtui: a few public-domain texts (one PDF, markdown with headings, plain text)."""

from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"
COLLECTION = "demo"
