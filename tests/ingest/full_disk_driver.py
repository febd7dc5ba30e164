"""Runs inside a private mount namespace on a small tmpfs (see test_full_disk.py): fills the disk but for
`room` KiB, ingests through the real CLI, frees the space, ingests again, and prints what happened as JSON.

    python -m tests.ingest.full_disk_driver MOUNT CORPUS HOST ROOM_KIB
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ragtui.config import load_settings
from ragtui.library import CollectionRegistry
from ragtui.stores.records import DONE


def cli(data: Path, host: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragtui", "--config", os.devnull, "--data-dir", str(data),
                           "--ollama-host", host, "--set", "synonyms.enabled=false", *args],
                          capture_output=True, text=True, timeout=300, check=False)


def stores(data: Path) -> dict[str, object]:
    """The chunk ids each store holds, compared with what the records say is done."""
    settings = load_settings(user_file=Path(os.devnull), env={}, overrides=[f"storage.data_dir={data}"])
    collection = CollectionRegistry(settings).open("docs")
    try:
        done = collection.records.chunk_ids(DONE)
        keyword = collection.keyword.ids()
        embedded = collection.records.embedded_ids(settings.embed.model)
        with collection.vector_access():
            vectors = collection.vectors(settings.embed.model).ids()
        return {"done": len(done), "keyword_matches": keyword == done, "vectors_match": vectors == embedded,
                "vectors_within_done": vectors <= done, "embedded": len(embedded), "state": collection.state}
    finally:
        collection.close()


def main() -> None:
    mount, corpus, host, room = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    data, filler = mount / "data", mount / "filler"
    free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - room * 1024))
    full = cli(data, host, "ingest", corpus, "-c", "docs")
    listed = cli(data, host, "collections", "list")
    filler.unlink()                 # then read what the failed run left (opening Chroma writes, so not before)
    after_full = stores(data)
    again = cli(data, host, "ingest", corpus, "-c", "docs")
    found = cli(data, host, "query", "--json", "--mode", "hybrid", "pumps priming impeller")
    print(json.dumps({"full": {"rc": full.returncode, "stdout": full.stdout, "stderr": full.stderr},
                      "after_full": after_full, "listed": listed.stdout,
                      "again": {"rc": again.returncode, "stdout": again.stdout, "stderr": again.stderr},
                      "after_again": stores(data), "query_rc": found.returncode, "query_stderr": found.stderr}))


if __name__ == "__main__":
    main()
