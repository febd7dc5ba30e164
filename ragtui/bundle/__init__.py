"""A research session as one JSON file a colleague can verify without the collection or a model: `history bundle`
writes it (`write`), `ragtui verify` reads it under its schema (`read`, `schema.json`), checks its integrity and
re-runs every check from its stored texts (`verify`), and compares it with the documents as they are now
(`against`). The format is documented in docs/bundle-format.md."""
