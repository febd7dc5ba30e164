"""What `collections info` reports about a collection, read once for both front ends: `profile(info, records,
settings)` gathers the formats, the skipped and duplicate files, the chunk-quality report, the entropy histogram and
its clusters and the embeddings still missing into a `CollectionProfile`; `profile_lines`, `histogram_lines` and
`cluster_lines` are its text (inert, one line each), as the CLI prints it and the TUI's collection-info dialog shows
it, and `histogram_title` the title of the histogram drawn as bars."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ragtui.ingest.clusters import H_RANGE, Cluster, entropy_clusters, entropy_histogram
from ragtui.ingest.quality import Quality, quality
from ragtui.sanitize import one_line

if TYPE_CHECKING:
    from ragtui.config import Settings
    from ragtui.model.collection import CollectionInfo
    from ragtui.stores.records import IngestRecords


@dataclass(frozen=True)
class CollectionProfile:
    """A collection as `collections info` reports it; one whose stores cannot be read has only its `info` and
    `unreadable`, the damage that stops the rest."""

    info: CollectionInfo
    unreadable: str = ""
    formats: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)        # (source, reason)
    duplicates: list[tuple[str, str]] = field(default_factory=list)     # (source, the indexed file it equals)
    histogram: list[int] = field(default_factory=list)                  # chunks per equal bin of histogram_range
    histogram_range: tuple[float, float] = H_RANGE                      # bits per byte
    clusters: list[Cluster] = field(default_factory=list)
    pending: dict[str, int] = field(default_factory=dict)               # chunks per model still without a vector
    quality: Quality = field(default_factory=Quality)

    def to_json(self) -> dict[str, Any]:
        """`collections info --json`: the info alone when the stores cannot be read."""
        if self.unreadable:
            return {"info": asdict(self.info)}
        return {"info": asdict(self.info), "formats": self.formats, "skipped": self.skipped,
                "duplicates": self.duplicates, "histogram": self.histogram,
                "clusters": [asdict(c) for c in self.clusters], "pending_embeddings": self.pending,
                "quality": self.quality.to_json()}


def profile(info: CollectionInfo, records: IngestRecords, settings: Settings) -> CollectionProfile:
    stats = records.chunk_stats()
    return CollectionProfile(
        info=info, formats=records.format_counts(),
        skipped=[(f.source, f.reason) for f in records.files("skipped")],
        duplicates=[(f.source, f.reason) for f in records.files("duplicate")],
        histogram=entropy_histogram([h for h, _ in stats]),
        clusters=entropy_clusters(stats, settings.ingest.entropy_min, settings.ingest.entropy_max),
        pending={m: records.pending_count(m) for m in settings.embed.all_models},
        quality=quality(records.chunk_edges(), records.filter_counts()))


def delete_hint(name: str) -> str:
    return f"delete it with `ragtui collections delete {name} --yes`, then ingest again"


def profile_lines(p: CollectionProfile) -> list[str]:
    """Everything but the histogram and the clusters: the summary, the embeddings missing, the formats, the
    skipped and duplicate files, the quality report."""
    info = p.info
    if p.unreadable:
        return [one_line(f"{info.name}  (damaged)  {p.unreadable}"), delete_hint(info.name)]
    lines = [f"{info.name}  ({info.state})  topic: {info.topic or '-'}  created {info.created}",
             f"files {info.files}, chunks {info.chunks}, models {', '.join(info.models) or '-'}"]
    if info.damaged:
        lines += [f"damaged: {info.damaged}; searched with keyword matches only", delete_hint(info.name)]
    lines += [f"  {n} chunks still need {model} embeddings" for model, n in p.pending.items() if n]
    lines.append("formats: " + (", ".join(f"{k} {v}" for k, v in p.formats.items()) or "-"))
    if p.skipped:
        lines.append(f"skipped ({len(p.skipped)}):")
        lines += [f"  {source}: {reason}" for source, reason in p.skipped]
    lines += [f"duplicate: {source} ({reason})" for source, reason in p.duplicates]
    lines += p.quality.lines()
    return [one_line(line) for line in lines]


HISTOGRAM_TITLE = "entropy histogram (bits/byte)"


def histogram_title(histogram: list[int]) -> str:
    """The title of the histogram drawn as bars, whose y axis counts chunks."""
    return f"{HISTOGRAM_TITLE}: chunks per bin, {sum(histogram)} in all"


def histogram_lines(histogram: list[int]) -> list[str]:
    """The histogram as a table of its non-empty bins, each with a bar of # scaled to the fullest (40 wide)."""
    width = (H_RANGE[1] - H_RANGE[0]) / len(histogram)
    top = max(histogram)
    lines = [f"{HISTOGRAM_TITLE}:"]
    for i, n in enumerate(histogram):
        if n:
            lo = H_RANGE[0] + i * width
            lines.append(f"  {lo:4.1f}-{lo + width:4.1f}  {'#' * max(1, 40 * n // top):40}  {n}")
    return lines


def cluster_lines(clusters: list[Cluster]) -> list[str]:
    lines = ["clusters (RAGWeed 2g):"]
    for c in clusters:
        flag = "  (excluded)" if c.excluded else ""
        lines.append(f"  {c.label:17} {c.size:7} chunks  H {c.h_mean:.2f}±{c.h_std:.2f}  words {c.word_mean:.0f}{flag}")
    return lines
