"""The demo corpus shipped with ragtui: a few public-domain texts (one PDF, markdown with headings, plain text)."""

from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"
COLLECTION = "demo"
TOPIC = "Public-domain samples: Darwin, Lincoln, the Declaration, and notes on reading sources"
