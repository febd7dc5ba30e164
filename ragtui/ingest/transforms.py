"""The LlamaIndex side of chunking and filtering: a NodeParser and a TransformComponent.

Both wrap the pure functions in `chunking` and `entropy`, so an IngestionPipeline
can chain them (documents -> chunk nodes -> kept nodes). Imported only by the
pipeline at run time: it pulls in llama_index.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ragtui import heavy

heavy.load("llama_index")  # first, so that this module's imports of it are lookups (ragtui/heavy.py)
from llama_index.core.bridge.pydantic import PrivateAttr  # noqa: E402
from llama_index.core.node_parser import NodeParser  # noqa: E402
from llama_index.core.schema import (  # noqa: E402
    BaseNode,
    Document,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
    TransformComponent,
)

from ragtui.config import Settings  # noqa: E402
from ragtui.ingest.chunking import (  # noqa: E402
    heading_at,
    markdown_sections,
    markdown_spans,
    page_at,
    trim_span,
    window_chars,
    window_spans,
)
from ragtui.ingest.entropy import junk_reason, text_entropy, word_count  # noqa: E402
from ragtui.ingest.extracted import Extracted, heading_path_at  # noqa: E402
from ragtui.ingest.structure import format_parts  # noqa: E402
from ragtui.model.chunks import ChunkMeta, chunk_id  # noqa: E402

PAGES_KEY = "pages_json"
HEADINGS_KEY = "headings_json"


def to_document(collection: str, doc: Extracted, file_hash: str) -> Document:
    """A LlamaIndex Document whose id is the source path: a stable doc id, so a changed file replaces its own
    chunks."""
    pages = [[p.start, p.label, p.index] for p in doc.pages]
    return Document(id_=doc.source, text=doc.text,
                    metadata={"collection": collection, "source": doc.source, "file_hash": file_hash,
                              "format": doc.format, "kind": doc.kind, "encoding": doc.encoding,
                              PAGES_KEY: json.dumps(pages), HEADINGS_KEY: json.dumps(doc.headings)})


class ChunkParser(NodeParser):
    """Sliding windows (per-type sizes), or markdown sections then windows; ids from (source, index)."""

    text_tokens: int = 2048
    pdf_tokens: int = 1024
    av_tokens: int = 512
    overlap_pct: int = 50
    strategy: str = "window"
    include_metadata: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> ChunkParser:
        c = settings.chunk
        return cls(text_tokens=c.size_tokens, pdf_tokens=c.pdf_tokens, av_tokens=c.av_tokens,
                   overlap_pct=c.overlap_pct, strategy=c.strategy)

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        for doc in nodes:
            out.extend(self.split(doc))
        return out

    def split(self, doc: BaseNode) -> list[TextNode]:
        meta = doc.metadata
        text = doc.get_content(MetadataMode.NONE)
        tokens = {"pdf": self.pdf_tokens, "av": self.av_tokens}.get(meta.get("kind", ""), self.text_tokens)
        chars, overlap = window_chars(tokens, self.overlap_pct)
        units = format_parts(text, chars, meta["format"])
        bounds = [(u.start, u.end) for u in units]
        leads = {u.start: u.lead for u in units if u.lead}
        tails = {u.end: u.tail for u in units if u.tail}
        shorter = {at: len(lead) for at, lead in leads.items()}
        if meta["format"] == "md" and self.strategy == "markdown":
            spans = markdown_spans(text, chars, overlap, bounds, shorter)
        elif meta["format"] == "md":
            sections = markdown_sections(text)
            spans = [(a, b, heading_at(sections, trim_span(text, a, b)[0]))
                     for a, b in window_spans(text, chars, overlap, units=bounds, leads=shorter)]
        else:
            headings = [(int(at), str(path)) for at, path in json.loads(meta.get(HEADINGS_KEY) or "[]")]
            spans = [(a, b, heading_path_at(headings, trim_span(text, a, b)[0]))
                     for a, b in window_spans(text, chars, overlap, units=bounds, leads=shorter)]
        pages = json.loads(meta.get(PAGES_KEY) or "[]")
        starts = [p[0] for p in pages]
        out = []
        for index, (a, b, heading) in enumerate(spans):
            start, end = trim_span(text, a, b)
            if start == end:
                continue
            lead, tail = leads.get(a, ""), tails.get(b, "")
            if lead:
                start = a          # a later part of a fence keeps its first line's indentation
            page, page_index, breaks = "", -1, ""
            if pages:
                first, last = page_at(pages, starts, start), page_at(pages, starts, end - 1)
                _, page, page_index = pages[first]
                if last > first:
                    breaks = json.dumps([[at - start + len(lead), str(label), int(i)]
                                         for at, label, i in pages[first + 1:last + 1]])
            cmeta = ChunkMeta(collection=meta["collection"], source=meta["source"], file_hash=meta["file_hash"],
                              format=meta["format"], chunk_index=index, char_start=start, char_end=end,
                              page=str(page), page_index=int(page_index), heading=heading, page_breaks=breaks,
                              lead=len(lead))
            node = TextNode(id_=chunk_id(meta["source"], index), text=lead + text[start:end] + tail,
                            metadata={**cmeta.to_dict(), "encoding": meta.get("encoding") or "utf-8"})
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=meta["source"])
            out.append(node)
        return out


class EntropyFilter(TransformComponent):
    """Drops junk chunks (`entropy.junk_reason`), stamping text_entropy and word_count on the rest."""

    entropy_min: float = 0.5
    entropy_max: float = 7.0
    toc_threshold: float = 0.6
    _by_source: dict[str, Counter[str]] = PrivateAttr(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings) -> EntropyFilter:
        i = settings.ingest
        return cls(entropy_min=i.entropy_min, entropy_max=i.entropy_max, toc_threshold=i.toc_ratio)

    def take_dropped(self, source: str) -> Counter[str]:
        """The chunks of one source dropped since the last call for it, per reason (forgotten here after)."""
        return self._by_source.pop(source, Counter())

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        kept = []
        for node in nodes:
            text = node.get_content(MetadataMode.NONE)
            h, words = text_entropy(text, node.metadata.get("encoding") or "utf-8"), word_count(text)
            reason = junk_reason(h, words, text, self.entropy_min, self.entropy_max, self.toc_threshold)
            if reason:
                self._by_source.setdefault(node.metadata["source"], Counter())[reason] += 1
                continue
            node.metadata["text_entropy"] = round(h, 4)
            node.metadata["word_count"] = words
            kept.append(node)
        return kept
