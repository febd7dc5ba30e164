"""The nouns every layer talks about, frozen, and importing nothing of ragtui but each other and the leaf modules.

`chunks` (a document's chunk and where a leg ranked it), `retrieval` (a ranked hit and
how every collection was searched), `conversation` (a research conversation, its turns
and sources, and the transitions of a source's annotation state), `collection` (a
collection as listed, and what an ingest did), `servers` (the servers the settings use, as a probe found them),
`filters` (a search filter).
"""
