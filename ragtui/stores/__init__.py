"""The three stores of a collection: Chroma for vectors, Whoosh for keywords (keyed by the same chunk ids),
and the SQLite records that journal the ingest."""
