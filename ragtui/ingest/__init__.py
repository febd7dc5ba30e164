"""Ingest: extract -> chunk -> entropy filter -> index (records, Whoosh) -> embed (Chroma); `pipeline.py` says why."""
