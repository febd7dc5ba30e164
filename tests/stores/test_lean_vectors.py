"""Chroma holds vectors, not texts: what `ragtui ingest` writes to the embedded Chroma database is each chunk's id,
vector and file, and nothing else (no document, no full-text index of it, no other metadata); the vector leg's hits
still come back with their text, and a collection whose Chroma rows were written the older way (LlamaIndex's
ChromaVectorStore: the text as Chroma's document, every metadata field and `_node_content`) is read as it is.
Through the real CLI, the fake Ollama over HTTP and the collection's own SQLite file."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path
from typing import Any

from ragtui.model.chunks import ChunkMeta
from ragtui.stores.vector import chroma_name
from tests.cli_run import cli
from tests.fake_ollama import FakeOllama

DOCS = {
    "valve.txt": "The float valve refills the cistern after each flush until the float rises. " * 4,
    "pump.txt": "A centrifugal pump moves water by spinning an impeller inside its casing. " * 4,
    "roof.txt": "Clay tiles on a pitched roof shed rain into the gutters along the eaves. " * 4,
}
MODEL = "nomic-embed-text"


def chroma_rows(collection: Path) -> dict[str, Any]:
    """What the collection's embedded Chroma database holds, read from its SQLite file (read-only)."""
    db = sqlite3.connect(f"file:{collection / 'chroma' / 'chroma.sqlite3'}?mode=ro", uri=True)
    try:
        keys = dict(db.execute("SELECT key, count(*) FROM embedding_metadata GROUP BY key").fetchall())
        fts = db.execute("SELECT count(*) FROM embedding_fulltext_search").fetchone()[0]
        vectors = db.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        sources = {r[0] for r in db.execute("SELECT string_value FROM embedding_metadata WHERE key = 'source'")}
    finally:
        db.close()
    return {"keys": keys, "fts": fts, "vectors": vectors, "sources": sources}


def ingest_docs(tmp_path: Path, fake_ollama: FakeOllama, docs: dict[str, str]) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text)
    done = cli(tmp_path, fake_ollama.url, "ingest", str(folder), "-c", "c")
    assert done.returncode == 0, done.stderr
    return folder


def vector_query(tmp_path: Path, fake_ollama: FakeOllama, question: str) -> dict[str, Any]:
    done = cli(tmp_path, fake_ollama.url, "query", question, "-c", "c", "--mode", "vector", "--json")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_chroma_holds_ids_vectors_and_files_only_and_hits_keep_their_text(tmp_path: Path,
                                                                          fake_ollama: FakeOllama) -> None:
    ingest_docs(tmp_path, fake_ollama, DOCS)
    rows = chroma_rows(tmp_path / "data" / "collections" / "c")
    assert rows["vectors"] == len(DOCS)
    assert rows["keys"] == {"source": len(DOCS)}        # no "chroma:document", no _node_content, no chunk fields
    assert rows["fts"] == 0 and rows["sources"] == set(DOCS)

    result = vector_query(tmp_path, fake_ollama, "float valve cistern")
    top = result["nodes"][0]
    assert top["source"] == "valve.txt" and top["legs"] == ["vector"]
    assert top["text"] == DOCS["valve.txt"].strip()
    filtered = cli(tmp_path, fake_ollama.url, "query", "water pump valve", "-c", "c", "--mode", "vector",
                   "-f", "path:pump*", "--json")
    assert [n["source"] for n in json.loads(filtered.stdout)["nodes"]] == ["pump.txt"]   # the `source` filter


def rewrite_the_older_way(collection: Path) -> None:
    """Put the collection's vectors back as earlier versions wrote them through LlamaIndex's ChromaVectorStore.add
    (llama-index-vector-stores-chroma 0.6): each node's text as Chroma's document, and beside the vector the
    node's metadata as `node_to_metadata_dict(node, remove_text=True, flat_metadata=True)` gives it (every chunk
    field, `_node_content`, `_node_type`, `doc_id`, `ref_doc_id`, `document_id`), None values as ""."""
    import chromadb
    from chromadb.config import Settings as ChromaConfig
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
    from llama_index.core.vector_stores.utils import node_to_metadata_dict

    records = sqlite3.connect(collection / "records.sqlite3")
    chunks = {cid: (zlib.decompress(text).decode(), json.loads(meta))     # the records hold texts compressed
              for cid, text, meta in records.execute("SELECT id, text, meta FROM chunks")}
    records.close()
    client = chromadb.PersistentClient(path=str(collection / "chroma"),
                                       settings=ChromaConfig(anonymized_telemetry=False))
    try:
        store = client.get_collection(chroma_name("chunks", MODEL))
        got = store.get(include=["embeddings"])
        store.delete(ids=got["ids"])
        documents, metadatas = [], []
        for cid in got["ids"]:
            text, meta = chunks[cid]
            node = TextNode(id_=cid, text=text, metadata=ChunkMeta.from_dict(meta).to_dict())
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=meta["source"])
            flat = node_to_metadata_dict(node, remove_text=True, flat_metadata=True)
            metadatas.append({k: "" if v is None else v for k, v in flat.items()})
            documents.append(text)
        store.add(ids=got["ids"], embeddings=got["embeddings"], metadatas=metadatas, documents=documents)
    finally:
        from ragtui.stores.vector import release_embedded

        release_embedded(collection / "chroma")


def test_a_collection_written_the_older_way_still_queries_and_a_rewritten_chunk_is_written_lean(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    folder = ingest_docs(tmp_path, fake_ollama, DOCS)
    collection = tmp_path / "data" / "collections" / "c"
    rewrite_the_older_way(collection)
    old = chroma_rows(collection)
    assert old["keys"]["chroma:document"] == len(DOCS) and old["keys"]["_node_content"] == len(DOCS)
    assert old["fts"] > 0

    result = vector_query(tmp_path, fake_ollama, "centrifugal pump impeller")
    top = result["nodes"][0]
    assert top["source"] == "pump.txt" and top["text"] == DOCS["pump.txt"].strip()
    assert result["retrieval_meta"]["collections"]["c"]["vector"]["vectors"] == {MODEL: len(DOCS)}

    (folder / "pump.txt").write_text("A piston pump draws water up a well with each stroke of its handle. " * 4)
    done = cli(tmp_path, fake_ollama.url, "ingest", str(folder), "-c", "c")
    assert done.returncode == 0, done.stderr
    mixed = chroma_rows(collection)
    assert mixed["vectors"] == len(DOCS)
    assert mixed["keys"]["chroma:document"] == len(DOCS) - 1      # the rewritten chunk left its text behind
    assert mixed["keys"]["source"] == len(DOCS)
    again = vector_query(tmp_path, fake_ollama, "piston pump stroke handle")
    assert again["nodes"][0]["text"].startswith("A piston pump draws water")
