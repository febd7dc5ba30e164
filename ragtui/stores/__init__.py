"""The two indexes of a collection: Chroma for vectors, Whoosh for keywords, keyed by the same chunk ids."""
