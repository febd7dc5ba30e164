"""Retrieval evaluation on BEIR-format datasets: loader, metrics with bootstrap CIs, runner."""
