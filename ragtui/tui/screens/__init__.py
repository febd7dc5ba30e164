"""Screens opened over the main workspace: help, source viewer, history, ingest, new collection."""
