"""Retrieval: hybrid vector + keyword legs, WordNet expansion, merging and packing."""
