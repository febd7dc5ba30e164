"""Retrieval: hybrid vector + keyword legs, WordNet expansion and merging."""
