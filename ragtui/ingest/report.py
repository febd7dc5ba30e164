"""What an ingest did, for the closing report of the CLI and the TUI's ingest panel."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ragtui.ingest.embedding import part_chars

# Ingest stages timed in IngestReport.stage_s, with the chunk count each one's rate is per. Embedding and
# vector writes run beside extraction and indexing, so the stages' seconds can add up to more than the run.
STAGES = (("extract", "extract + chunk", "indexed"), ("journal", "journal", "indexed"),
          ("index", "keyword index", "indexed"), ("merge", "keyword merge", ""), ("embed", "embedding", "embedded"),
          ("vectors", "vector writes", "embedded"))


@dataclass
class IngestReport:
    collection: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    duplicates: list[tuple[str, str]] = field(default_factory=list)   # (source, the indexed file it equals)
    skipped: list[tuple[str, str]] = field(default_factory=list)      # (source, reason)
    filtered: Counter[str] = field(default_factory=Counter)           # dropped chunks per reason
    chunks_indexed: int = 0
    chunks_embedded: int = 0
    reconciled: int = 0              # store entries repaired after an interrupted run
    elapsed_s: float = 0.0
    needs_embedding: bool = False    # some chunks still have no vector (Ollama down, model missing)
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    ignored: Counter[str] = field(default_factory=Counter)            # paths left out uncounted-by-name, per why
    mostly_filtered: list[tuple[str, int, Counter[str]]] = field(default_factory=list)  # (source, kept, dropped)
    stage_s: dict[str, float] = field(default_factory=dict)   # seconds per stage (STAGES), summed over the run
    # model -> (chunks longer than its window, embedded as averaged parts; its context length, None if unknown)
    split: dict[str, tuple[int, int | None]] = field(default_factory=dict)

    @property
    def skipped_by_reason(self) -> dict[str, list[str]]:
        """Sources grouped by the kind of reason (the part before the first colon)."""
        out: dict[str, list[str]] = {}
        for source, reason in self.skipped:
            out.setdefault(reason.split(":", 1)[0], []).append(source)
        return out

    def reason_of(self, source: str) -> str | None:
        return next((r for s, r in self.skipped if s == source), None)

    def add_time(self, stage: str, seconds: float) -> None:
        self.stage_s[stage] = self.stage_s.get(stage, 0.0) + seconds

    def stage_lines(self) -> list[str]:
        """'<stage> <s> s (<chunks/s> chunks/s)' for each stage that ran."""
        out = []
        for key, label, per in STAGES:
            if (seconds := self.stage_s.get(key)) is None:
                continue
            chunks = {"indexed": self.chunks_indexed, "embedded": self.chunks_embedded}.get(per, 0)
            rate = f" ({chunks / seconds:,.0f} chunks/s)" if chunks and seconds > 0 else ""
            out.append(f"{label} {seconds:.1f} s{rate}")
        return out

    def lines(self) -> list[str]:
        """The closing report as plain text lines."""
        out = [f"collection {self.collection}: {len(self.added)} added, {len(self.updated)} updated, "
               f"{self.unchanged} unchanged, {len(self.removed)} removed, {len(self.duplicates)} duplicate, "
               f"{len(self.skipped)} skipped ({self.elapsed_s:.1f} s)",
               f"chunks: {self.chunks_indexed} indexed, {self.chunks_embedded} embedded"]
        if self.ignored:
            out.append("not ingested: " + ", ".join(f"{n} {why}" for why, n in sorted(self.ignored.items()))
                       + " (hidden paths and ingest.ignore/.ragtuiignore matches)")
        if stages := self.stage_lines():
            out.append("stages: " + "; ".join(stages))
        for model, (n, tokens) in sorted(self.split.items()):
            window = f"{tokens} tokens, ~{part_chars(tokens):,} chars" if tokens else \
                f"context length unknown, {part_chars(None):,} chars"
            out.append(f"embedding: {n} chunk(s) longer than {model}'s window ({window}) embedded as averaged "
                       "overlapping parts")
        if self.filtered:
            out.append("chunks filtered: " + ", ".join(f"{n} {r}" for r, n in sorted(self.filtered.items())))
        for source, kept, dropped in self.mostly_filtered:
            what = "all" if not kept else f"{sum(dropped.values())} of {kept + sum(dropped.values())}"
            out.append(f"  {source}: {what} chunks filtered ("
                       + ", ".join(f"{n} {r}" for r, n in sorted(dropped.items())) + ")")
        for kind, sources in sorted(self.skipped_by_reason.items()):
            out.append(f"skipped, {kind}: {len(sources)}")
            out.extend(f"  {s}: {self.reason_of(s)}" for s in sources)
        out.extend(f"duplicate: {s} (same bytes as {orig})" for s, orig in self.duplicates)
        if self.reconciled:
            out.append(f"repaired {self.reconciled} store entries left by an interrupted ingest")
        out.extend(f"warning: {w}" for w in self.warnings)
        if self.needs_embedding:
            out.append("some chunks have no embeddings yet: keyword search works; run the ingest again "
                       "when Ollama is reachable")
        if self.interrupted:
            out.append("interrupted: run the same ingest again to finish")
        return out
