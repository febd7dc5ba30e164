"""Keeping a collection in order without ingesting: which recorded files a path names, and the keyword index
built again from the records.

`files_named` turns what the user typed into the recorded files it means: a file
or folder as the collection lists it ("notes/a.md", "notes/"), or a path on disk
under a folder the collection was ingested from. `rebuild_keyword` builds a new
keyword index from every chunk of the records (which hold each chunk's text) in a
folder beside the collection's, under the ingest lock, and the keyword index then
takes it in one commit (`KeywordIndex.adopt`): readers keep answering from the old
one until then, so a damaged or outdated keyword index no longer means deleting
the collection (one whose table of contents cannot be read at all, which no reader
can use either, is replaced folder for folder). The sentence index of
sentence-window retrieval is not rebuilt.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragtui.errors import RagtuiError
from ragtui.library import KEYWORD, Collection
from ragtui.model.chunks import Chunk
from ragtui.paths import user_path
from ragtui.stores.records import DONE, FileRecord

REBUILD_FOLDER = "whoosh.rebuild"
REBUILD_CHUNKS = 2000          # chunks per commit of the new index, as an ingest's batches


def files_named(collection: Collection, paths: Sequence[str]) -> list[str]:
    """The recorded top-level files (not an archive's members: their archive is named) these paths name, in
    the collection's order; RagtuiError (exit code 2) naming every path that names none, before anything
    changes."""
    files = [f for f in collection.records.files() if not f.container]
    found: dict[str, None] = {}
    missing = []
    for path in paths:
        named = [f.source for f in files if _names(path, f)]
        if not named:
            missing.append(path)
        found.update(dict.fromkeys(named))
    if missing:
        raise RagtuiError(f"not in collection {collection.name}: {', '.join(missing)}",
                          hint=f"`ragtui collections info {collection.name}` lists what it holds; give a file or "
                               "folder as listed there, or a path on disk under the folder it was ingested from",
                          exit_code=2)
    return [f.source for f in files if f.source in found]


def _names(path: str, record: FileRecord) -> bool:
    """`path` is the file's name in the collection, a folder of it there ("notes/" or "notes"), or the file or a
    folder above it on disk."""
    listed = path.strip().rstrip("/")
    if listed and (record.source == listed or record.source.startswith(listed + "/")):
        return True
    if not record.root:
        return False
    on_disk = Path(record.root) / record.source if Path(record.root).is_dir() else Path(record.root)
    wanted = user_path(path).resolve()
    return on_disk == wanted or wanted in on_disk.parents


def rebuild_keyword(collection: Collection) -> int:
    """The keyword index built again from the records and put in place in one commit (module docstring);
    under the ingest lock (IngestBusy while an ingest writes). Returns the chunks indexed."""
    from ragtui.stores.keyword import KeywordIndex
    from ragtui.stores.postings import Bm25Params

    with collection.ingest_lock():
        folder = collection.path / REBUILD_FOLDER
        if folder.exists():                        # left by a rebuild that did not finish
            import shutil

            shutil.rmtree(folder)
        keyword = collection.settings.keyword
        built = KeywordIndex(folder, Bm25Params(keyword.bm25_k1, keyword.bm25_b))
        try:
            batch: list[Chunk] = []
            for record in collection.records.files(DONE):
                batch.extend(collection.records.chunks_of([record.source]))
                if len(batch) >= REBUILD_CHUNKS:
                    built.replace_sources([], batch)
                    batch = []
            if batch:
                built.replace_sources([], batch)
            built.merge()
        finally:
            built.close()
        try:
            live = collection.keyword          # opening it reads its table of contents
        except Exception:  # none readable (KeywordIndexDamaged, or Whoosh's own errors): no reader can use it
            return _put_in_place(collection, folder)
        return live.adopt(folder)


def _put_in_place(collection: Collection, built: Path) -> int:
    """The built index's folder in place of a keyword index that cannot be opened at all."""
    import shutil

    from ragtui.stores.keyword import KeywordIndex

    live = collection.path / KEYWORD
    aside = collection.path / f"{REBUILD_FOLDER}.damaged"
    shutil.rmtree(aside, ignore_errors=True)
    if live.exists():
        live.rename(aside)
    built.rename(live)
    shutil.rmtree(aside, ignore_errors=True)
    index = KeywordIndex(live)
    try:
        return index.doc_count()
    finally:
        index.close()
