"""Ingest: extract -> chunk -> entropy filter -> embed -> index (RAGWeed 2a-2d, nadir's fixes)."""
