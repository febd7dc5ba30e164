"""LLM side of a research session: providers, annotation (RAGWeed 4), context packing and synthesis (RAGWeed 3g, 5)."""
