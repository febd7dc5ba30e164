"""Chunk <-> LlamaIndex node, so the stores and pipelines speak LlamaIndex while the app speaks Chunk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragtui.model.chunks import Chunk, ChunkMeta

if TYPE_CHECKING:
    from llama_index.core.schema import BaseNode, TextNode


def chunk_to_node(chunk: Chunk, embedding: Sequence[float] | None = None) -> TextNode:
    """A TextNode whose SOURCE is the file path, so `delete(ref_doc_id=source)` finds all of a file's chunks."""
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    node = TextNode(id_=chunk.id, text=chunk.text, metadata=chunk.meta.to_dict(),
                    embedding=list(embedding) if embedding is not None else None)
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=chunk.meta.source)
    return node


def node_to_chunk(node: BaseNode) -> Chunk:
    from llama_index.core.schema import MetadataMode

    return Chunk(id=node.node_id, text=node.get_content(MetadataMode.NONE), meta=ChunkMeta.from_dict(node.metadata))
