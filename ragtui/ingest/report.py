"""An ingest's tally while it runs, and the text of its closing report for the CLI and the TUI's ingest panel.

The pipeline counts into an `IngestTally` and hands the front ends its frozen
`IngestReport` (ragtui.model.collection) once, in `IngestFinished`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from ragtui.ingest.discover import BIBLIOGRAPHY
from ragtui.ingest.embedding import part_chars
from ragtui.model.collection import IngestReport, frozen_counts

# Ingest stages timed in IngestReport.stage_s, with the chunk count each one's rate is per. Embedding and
# vector writes run beside extraction and indexing, so the stages' seconds can add up to more than the run.
STAGES = (("extract", "extract + chunk", "indexed"), ("journal", "journal", "indexed"),
          ("index", "keyword index", "indexed"), ("sentences", "sentence index", "indexed"),
          ("merge", "keyword merge", ""), ("embed", "embedding", "embedded"),
          ("vectors", "vector writes", "embedded"))


@dataclass
class IngestTally:
    """What an ingest has done so far; `freeze()` gives the report."""

    collection: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    filtered: Counter[str] = field(default_factory=Counter)
    chunks_indexed: int = 0
    chunks_embedded: int = 0
    vectors_reused: int = 0
    reconciled: int = 0
    elapsed_s: float = 0.0
    needs_embedding: bool = False
    vectors_unreachable: str = ""
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    ignored: Counter[str] = field(default_factory=Counter)
    mostly_filtered: list[tuple[str, int, Counter[str]]] = field(default_factory=list)
    stage_s: dict[str, float] = field(default_factory=dict)
    split: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    embedder: str = "Ollama"

    def add_time(self, stage: str, seconds: float) -> None:
        self.stage_s[stage] = self.stage_s.get(stage, 0.0) + seconds

    def freeze(self) -> IngestReport:
        return IngestReport(
            collection=self.collection, added=tuple(self.added), updated=tuple(self.updated),
            unchanged=self.unchanged, removed=tuple(self.removed), duplicates=tuple(self.duplicates),
            skipped=tuple(self.skipped), filtered=frozen_counts(self.filtered), chunks_indexed=self.chunks_indexed,
            chunks_embedded=self.chunks_embedded, vectors_reused=self.vectors_reused, reconciled=self.reconciled,
            elapsed_s=self.elapsed_s,
            needs_embedding=self.needs_embedding, vectors_unreachable=self.vectors_unreachable,
            interrupted=self.interrupted, warnings=tuple(self.warnings),
            ignored=frozen_counts(self.ignored),
            mostly_filtered=tuple((s, kept, frozen_counts(dropped)) for s, kept, dropped in self.mostly_filtered),
            stage_s=MappingProxyType(dict(self.stage_s)), split=MappingProxyType(dict(self.split)),
            embedder=self.embedder)


def stage_lines(report: IngestReport) -> list[str]:
    """'<stage> <s> s (<chunks/s> chunks/s)' for each stage that ran."""
    out = []
    for key, label, per in STAGES:
        if (seconds := report.stage_s.get(key)) is None:
            continue
        chunks = {"indexed": report.chunks_indexed, "embedded": report.chunks_embedded}.get(per, 0)
        rate = f" ({chunks / seconds:,.0f} chunks/s)" if chunks and seconds > 0 else ""
        out.append(f"{label} {seconds:.1f} s{rate}")
    return out


def report_json(report: IngestReport) -> dict[str, Any]:
    """The report as JSON-ready data (`ingest --json`): every field by name, mappings as objects, tuples as
    lists; file names and reasons as the ingest recorded them."""
    def plain(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, tuple | list):
            return [plain(v) for v in value]
        return value
    return {f.name: plain(getattr(report, f.name)) for f in fields(report)}


def recheck_line(sessions: int, stale: int) -> str:
    """What the re-check of the sessions citing changed or removed files found, in one line."""
    if not sessions:
        return "history: no saved session cites a changed or removed file"
    noun = "session" if sessions == 1 else "sessions"
    found = f"{stale} stale citation{'' if stale == 1 else 's'} (`ragtui history verify` lists them)" if stale \
        else "every citation current"
    return f"history: re-checked {sessions} {noun} citing a changed or removed file: {found}"


def report_lines(report: IngestReport) -> list[str]:
    """The closing report as plain text lines."""
    out = [f"collection {report.collection}: {len(report.added)} added, {len(report.updated)} updated, "
           f"{report.unchanged} unchanged, {len(report.removed)} removed, {len(report.duplicates)} duplicate, "
           f"{len(report.skipped)} skipped ({report.elapsed_s:.1f} s)",
           f"chunks: {report.chunks_indexed} indexed, {report.chunks_embedded} embedded"
           + (f" ({report.vectors_reused} with the vector of a chunk of the same text, not embedded again)"
              if report.vectors_reused else "")]
    if report.ignored:
        rules = set(report.ignored) - {BIBLIOGRAPHY}          # the bibliography kind names itself
        out.append("not ingested: " + ", ".join(f"{n} {why}" for why, n in sorted(report.ignored.items()))
                   + (" (hidden paths and ingest.ignore/.ragtuiignore matches)" if rules else ""))
    if stages := stage_lines(report):
        out.append("stages: " + "; ".join(stages))
    for model, (n, tokens) in sorted(report.split.items()):
        window = f"{tokens} tokens, ~{part_chars(tokens):,} chars" if tokens else \
            f"context length unknown, {part_chars(None):,} chars"
        out.append(f"embedding: {n} chunk(s) longer than {model}'s window ({window}) embedded as averaged "
                   "overlapping parts")
    if report.filtered:
        out.append("chunks filtered: " + ", ".join(f"{n} {r}" for r, n in sorted(report.filtered.items())))
    for source, kept, dropped in report.mostly_filtered:
        what = "all" if not kept else f"{sum(dropped.values())} of {kept + sum(dropped.values())}"
        out.append(f"  {source}: {what} chunks filtered ("
                   + ", ".join(f"{n} {r}" for r, n in sorted(dropped.items())) + ")")
    for kind, sources in sorted(report.skipped_by_reason.items()):
        out.append(f"skipped, {kind}: {len(sources)}")
        out.extend(f"  {s}: {report.reason_of(s)}" for s in sources)
    out.extend(f"duplicate: {s} (same bytes as {orig})" for s, orig in report.duplicates)
    if report.reconciled:
        out.append(f"repaired {report.reconciled} store entries left by an interrupted ingest")
    if report.sessions_rechecked is not None:
        out.append(recheck_line(report.sessions_rechecked, report.citations_stale))
    out.extend(f"warning: {w}" for w in report.warnings)
    if report.needs_embedding:
        out.append("some chunks have no embeddings yet: keyword search works; run the ingest again when "
                   + (f"the Chroma server at {report.vectors_unreachable} answers" if report.vectors_unreachable
                      else f"{report.embedder} is reachable"))
    if report.interrupted:
        out.append("interrupted: run the same ingest again to finish")
    return out
