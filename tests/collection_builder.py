"""Build small collections straight through the stores, for retrieval tests that must not wait for ingest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragtui.config import Settings
from ragtui.library import Collection, CollectionRegistry
from ragtui.model import Chunk, ChunkMeta, chunk_id
from ragtui.stores.keyword import KeywordIndex


def index_chunks(index: KeywordIndex, chunks: Sequence[Chunk]) -> int:
    """Write chunks to a keyword index as ingest does: every chunk of their files replaced, in one commit."""
    return index.replace_sources({c.meta.source for c in chunks}, chunks)


def whoosh_segments(index: KeywordIndex) -> int:
    """The index's segments, as Whoosh itself counts them."""
    import whoosh.index

    with whoosh.index.open_dir(str(index.path)).reader() as reader:
        return len(reader.leaf_readers())


def make_chunks(collection: str, files: Mapping[str, Sequence[str]]) -> list[Chunk]:
    """A file's texts as its consecutive chunks: each starts where the previous one ended (no overlap)."""
    chunks = []
    for source, texts in files.items():
        start = 0
        for i, text in enumerate(texts):
            meta = ChunkMeta(collection=collection, source=source, file_hash="h-" + source, format="txt",
                             chunk_index=i, char_start=start, char_end=start + len(text),
                             word_count=len(text.split()))
            chunks.append(Chunk(id=chunk_id(source, i), text=text, meta=meta))
            start += len(text) + 1
    return chunks


def build_collection(settings: Settings, name: str, files: Mapping[str, Sequence[str]], *,
                     models: Sequence[str] | None = None) -> Collection:
    """Chunks into Whoosh, and into Chroma for each model embedded through the (fake) Ollama server.

    models=[] leaves the collection without vectors, as an ingest that could not reach Ollama would.
    """
    from llama_index.embeddings.ollama import OllamaEmbedding

    collection = CollectionRegistry(settings).create(name)
    chunks = make_chunks(name, files)
    index_chunks(collection.keyword, chunks)
    models = list(settings.embed.all_models if models is None else models)
    for model in models:
        embedder = OllamaEmbedding(model_name=model, base_url=settings.ollama.host)
        vectors = embedder.get_text_embedding_batch([c.text for c in chunks])
        collection.vectors(model).add(chunks, vectors)
    collection.update_manifest(models=models, state="ready")
    collection.close()
    return collection
