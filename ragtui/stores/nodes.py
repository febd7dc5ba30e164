"""LlamaIndex node -> Chunk, so the ingest pipeline speaks LlamaIndex while the app speaks Chunk."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragtui.model.chunks import Chunk, ChunkMeta

if TYPE_CHECKING:
    from llama_index.core.schema import BaseNode


def node_to_chunk(node: BaseNode) -> Chunk:
    from llama_index.core.schema import MetadataMode

    return Chunk(id=node.node_id, text=node.get_content(MetadataMode.NONE), meta=ChunkMeta.from_dict(node.metadata))
