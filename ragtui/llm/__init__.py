"""LLM side of a research session: providers, annotation, context packing and synthesis."""
