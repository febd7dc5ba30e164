"""A collection's state as listed, and what one ingest did.

`IngestReport` is the frozen report an ingest ends with (the pipeline counts into
its own tally and freezes it once); the text the CLI and the TUI show for it is
written by `ragtui.ingest.report.report_lines`, not here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

CollectionState = Literal["empty", "ready", "ingesting", "needs embeddings", "interrupted", "damaged"]


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    topic: str
    created: str
    models: tuple[str, ...]          # embedding models whose vectors the collection holds
    chunks: int                      # chunks in the keyword index (every chunk is there)
    state: CollectionState
    files: int = 0                   # files indexed (zip members count, zips themselves do not)
    skipped: int = 0                 # files skipped with a reason
    damaged: str = ""                # state "damaged": which file could not be read, and why
    watched: bool = False            # an `ingest --watch` process keeps it in step with a folder right now


def _empty() -> Mapping[str, int]:
    return MappingProxyType({})


@dataclass(frozen=True)
class IngestReport:
    """What an ingest did, as it stood when the ingest ended."""

    collection: str
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    unchanged: int = 0
    removed: tuple[str, ...] = ()
    duplicates: tuple[tuple[str, str], ...] = ()     # (source, the indexed file it equals)
    skipped: tuple[tuple[str, str], ...] = ()        # (source, reason)
    filtered: Mapping[str, int] = field(default_factory=_empty)   # dropped chunks per reason
    chunks_indexed: int = 0
    chunks_embedded: int = 0
    vectors_reused: int = 0          # of those, chunks given the vector of a chunk of the same heading and text
    reconciled: int = 0              # store entries repaired after an interrupted run
    elapsed_s: float = 0.0
    needs_embedding: bool = False    # some chunks still have no vector (Ollama down, model missing)
    vectors_unreachable: str = ""    # the Chroma server (host:port) that did not answer, so they could not be stored
    interrupted: bool = False
    warnings: tuple[str, ...] = ()
    ignored: Mapping[str, int] = field(default_factory=_empty)    # paths left out uncounted-by-name, per why
    mostly_filtered: tuple[tuple[str, int, Mapping[str, int]], ...] = ()   # (source, kept, dropped per reason)
    stage_s: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))   # seconds per stage
    # model -> (chunks longer than its window, embedded as averaged parts; its context length, None if unknown)
    split: Mapping[str, tuple[int, int | None]] = field(default_factory=lambda: MappingProxyType({}))
    embedder: str = "Ollama"         # who embeds (embed.provider), in the words of the report
    # the saved sessions citing a file this ingest changed or removed, re-checked against the collection now
    # (ragtui.citation_recheck), and their sources found moved, changed or gone; None: nothing to re-check
    # (no file changed or left), or the history could not be read (a warning says so)
    sessions_rechecked: int | None = None
    citations_stale: int = 0

    @property
    def skipped_by_reason(self) -> dict[str, list[str]]:
        """Sources grouped by the kind of reason (the part before the first colon)."""
        out: dict[str, list[str]] = {}
        for source, reason in self.skipped:
            out.setdefault(reason.split(":", 1)[0], []).append(source)
        return out

    def reason_of(self, source: str) -> str | None:
        return next((r for s, r in self.skipped if s == source), None)


def frozen_counts(counts: Mapping[str, int]) -> Mapping[str, int]:
    """A read-only copy of a tally (a Counter keeps its most_common and missing-is-zero reading)."""
    return MappingProxyType(Counter(counts))
