"""LLM side of a research session: providers, annotation (RAGWeed 4), synthesis (RAGWeed 5)."""
