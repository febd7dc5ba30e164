"""An 8-bit copy of one model's vectors beside an embedded Chroma, memory-mapped and scanned whole while
Chroma loads its HNSW index.

Why: an embedded Chroma loads a collection's whole HNSW index into the heap on its first read. Its fork
of hnswlib copies `data_level0.bin` (every vector and its level-0 links) and neither offers a
memory-mapped or partial load (nmslib/hnswlib#47), so at 1M vectors a cold process waited 3-4 s before
its first vector search. A search of this copy maps its rows and reads them once: one pass over N x dim
bytes, the files in the page cache, no load.

Each vector is kept as int8 values scaled by its own largest magnitude (v * 127 / max|v|), and with
one float32 factor (max|v| / 127 / |v|) that turns the int8 dot product with a unit query into the
cosine similarity; the rounding moves a score by about 1e-3, so the copy ranks as an exact search
would, up to near ties (docs/benchmarks.md measures it against exact float search).

Files, in `folder` (one per Chroma collection, `vector_copy/<chroma name>/` in the collection folder):

    rows.i8     the int8 rows, `dim` bytes each, in the order written
    scales.f4   each row's float32 factor
    ids         each row's chunk id, UTF-8, NUL-padded to `width` bytes
    dead        one byte per row, 1 once the row's vector was deleted or written again
    state.json  {"dim", "rows", "width", "clean"}, replaced atomically, last

Only the copy's writer (the Chroma writer, under the collection's exclusive vector lock) changes it.
`begin` marks it unclean before Chroma is written and `commit` marks it clean again once the copy holds
the same, so a write cut short (a kill, an error) leaves it unclean: readers then ignore it, and the next
write first rebuilds it from Chroma. Rows past `rows` (a write cut short) are never read.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

STATE = "state.json"
ROWS, SCALES, IDS, DEAD = "rows.i8", "scales.f4", "ids", "dead"
BLOCK_ROWS = 16_384      # rows widened to float32 at a time: 24 MiB at 384 dimensions
COMPACT_AT = 0.25        # the share of dead rows at which a commit rewrites the copy without them


class CopyView:
    """A clean copy as `VectorCopy.view` found it, mapped read-only; searchable from any thread."""

    def __init__(self, folder: Path, state: dict[str, Any]) -> None:
        import numpy as np

        self.dim = int(state["dim"])
        self.rows = int(state["rows"])
        self.width = int(state["width"])
        self._rows = _mapped(folder / ROWS, np.int8, (self.rows, self.dim))
        self._scales = _mapped(folder / SCALES, np.float32, (self.rows,))
        self._ids = _mapped(folder / IDS, np.uint8, (self.rows * self.width,))
        self._dead = _mapped(folder / DEAD, np.uint8, (self.rows,))
        self.count = self.rows - int(self._dead.sum(dtype=np.int64)) if self.rows else 0

    def search(self, embedding: Sequence[float], top_k: int) -> list[tuple[str, float]]:
        """The ids of the top_k rows nearest `embedding` by cosine similarity, with it, best first."""
        import numpy as np

        if top_k <= 0 or self.count == 0:
            return []
        query = np.asarray(embedding, dtype=np.float32)
        query = query / np.float32(np.linalg.norm(query))
        wide = np.empty((min(BLOCK_ROWS, self.rows), self.dim), dtype=np.float32)
        best_rows: list[Any] = []
        best_scores: list[Any] = []
        for start in range(0, self.rows, BLOCK_ROWS):
            end = min(start + BLOCK_ROWS, self.rows)
            block = wide[:end - start]
            np.copyto(block, self._rows[start:end], casting="unsafe")
            scores = (block @ query) * self._scales[start:end]
            scores[self._dead[start:end] != 0] = -np.inf
            keep = min(top_k, end - start)
            top = np.argpartition(scores, -keep)[-keep:]
            best_rows.append(top + start)
            best_scores.append(scores[top])
        rows, scores = np.concatenate(best_rows), np.concatenate(best_scores)
        order = np.argsort(-scores, kind="stable")[:top_k]
        return [(self._id(int(rows[i])), float(scores[i])) for i in order if np.isfinite(scores[i])]

    def _id(self, row: int) -> str:
        return bytes(self._ids[row * self.width:(row + 1) * self.width]).rstrip(b"\0").decode("utf-8")


class VectorCopy:
    """The copy in `folder`: its writer's side (`begin`, `put`, `remove`, `commit`) and a reader's `view`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._where: dict[str, int] | None = None      # id -> row of its live vector, built when first needed

    def state(self) -> dict[str, Any] | None:
        try:
            state = json.loads((self.folder / STATE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) else None

    def view(self) -> CopyView | None:
        """The copy mapped for searching; None when there is none, or it is not clean, or a file is short."""
        state = self.state()
        if state is None or state.get("clean") is not True:
            return None
        try:
            return CopyView(self.folder, state)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    # --- the writer's side: only under the collection's exclusive vector lock -------------------------------

    def begin(self) -> bool:
        """Mark the copy unclean before Chroma is written; False when it was not clean before (or is missing),
        so the caller must `rebuild` it once this write is done."""
        state = self.state()
        was_clean = state is not None and state.get("clean") is True and self._whole(state)
        if was_clean and state is not None:
            self._write_state({**state, "clean": False})
        else:
            self._where = None
        return was_clean

    def rebuild(self, dim: int, pages: Iterable[tuple[Sequence[str], Any]]) -> None:
        """Start the copy again from these (ids, vectors) pages: what Chroma holds now. Ends unclean."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True, exist_ok=True)
        for name in (ROWS, SCALES, IDS, DEAD):
            (self.folder / name).write_bytes(b"")
        self._write_state({"dim": dim, "rows": 0, "width": 0, "clean": False})
        self._where = {}
        for ids, vectors in pages:
            self.put(ids, vectors)

    def put(self, ids: Sequence[str], vectors: Any) -> None:
        """Append these vectors (an id already held gets its old row marked dead first)."""
        import numpy as np

        if not len(ids):
            return
        state = self._require()
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        if matrix.shape[1] != state["dim"]:
            raise ValueError(f"the copy holds {state['dim']}-dimensional vectors, not {matrix.shape[1]}")
        self.remove(ids)
        state = self._require()
        encoded = [i.encode("utf-8") for i in ids]
        width = max(state["width"], max(map(len, encoded)))
        if width != state["width"]:
            self._widen(state, width)
            state = self._require()
        peak = np.abs(matrix).max(axis=1)
        rows = np.rint(matrix * (127.0 / peak)[:, None]).astype(np.int8)
        scales = (peak / 127.0 / np.linalg.norm(matrix, axis=1)).astype(np.float32)
        first = state["rows"]
        self._append(ROWS, rows.tobytes(), first * state["dim"])
        self._append(SCALES, scales.tobytes(), first * 4)
        self._append(IDS, b"".join(e.ljust(width, b"\0") for e in encoded), first * width)
        self._append(DEAD, bytes(len(ids)), first)
        where = self._index(state)
        for n, cid in enumerate(ids):
            where[cid] = first + n
        self._write_state({**state, "rows": first + len(ids)})

    def remove(self, ids: Iterable[str]) -> None:
        """Mark the rows of these ids dead (an id the copy does not hold is passed over)."""
        state = self._require()
        where = self._index(state)
        rows = sorted(r for r in (where.pop(i, None) for i in ids) if r is not None)
        if not rows:
            return
        with open(self.folder / DEAD, "r+b") as f:
            for row in rows:
                f.seek(row)
                f.write(b"\1")

    def commit(self) -> None:
        """The copy holds what Chroma holds: flush it, compact it when a quarter of it is dead, mark it clean."""
        state = self._require()
        where = self._index(state)
        if state["rows"] and (state["rows"] - len(where)) >= COMPACT_AT * state["rows"]:
            state = self._compact(state, where)
        for name in (ROWS, SCALES, IDS, DEAD):
            with open(self.folder / name, "rb+") as f:
                os.fsync(f.fileno())
        self._write_state({**state, "clean": True})

    def delete(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self._where = None

    def _whole(self, state: dict[str, Any]) -> bool:
        """Every file holds at least the rows the state counts (a copy damaged on disk is made again)."""
        try:
            rows, dim, width = int(state["rows"]), int(state["dim"]), int(state["width"])
            sizes = {ROWS: rows * dim, SCALES: rows * 4, IDS: rows * width, DEAD: rows}
            return all((self.folder / name).stat().st_size >= size for name, size in sizes.items())
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def _require(self) -> dict[str, Any]:
        state = self.state()
        if state is None:
            raise RuntimeError(f"the vector copy in {self.folder} has no state: rebuild it first")
        return state

    def _index(self, state: dict[str, Any]) -> dict[str, int]:
        """id -> row of every live row, read from the files once per writer."""
        if self._where is None and not state["rows"]:
            self._where = {}
        if self._where is None:
            import numpy as np

            rows, width = state["rows"], state["width"]
            ids: Any = np.fromfile(self.folder / IDS, dtype=f"S{width}", count=rows)
            dead: Any = np.fromfile(self.folder / DEAD, dtype=np.uint8, count=rows)
            self._where = {bytes(cid).decode("utf-8"): int(n) for n, cid in zip(np.flatnonzero(dead == 0),
                                                                                ids[dead == 0], strict=True)}
        return self._where

    def _append(self, name: str, data: bytes, at: int) -> None:
        """Write `data` at byte `at` of the file (its end as the state counts it), cutting what a write cut
        short had left past that."""
        with open(self.folder / name, "r+b") as f:
            f.truncate(at)
            f.seek(at)
            f.write(data)

    def _widen(self, state: dict[str, Any], width: int) -> None:
        """Rewrite the ids at a larger width (an id longer than any before)."""
        import numpy as np

        rows = state["rows"]
        if rows:
            ids = np.fromfile(self.folder / IDS, dtype=f"S{state['width']}", count=rows)
            _replace(self.folder / IDS, ids.astype(f"S{width}").tobytes())
        self._write_state({**state, "width": width})

    def _compact(self, state: dict[str, Any], where: dict[str, int]) -> dict[str, Any]:
        """The copy rewritten with its live rows only, in their order."""
        import numpy as np

        live = np.array(sorted(where.values()), dtype=np.int64)
        rows, dim, width = state["rows"], state["dim"], state["width"]
        matrix = np.fromfile(self.folder / ROWS, dtype=np.int8, count=rows * dim).reshape(rows, dim)
        scales = np.fromfile(self.folder / SCALES, dtype=np.float32, count=rows)
        ids = np.fromfile(self.folder / IDS, dtype=f"S{width}", count=rows)
        _replace(self.folder / ROWS, matrix[live].tobytes())
        _replace(self.folder / SCALES, scales[live].tobytes())
        _replace(self.folder / IDS, ids[live].tobytes())
        _replace(self.folder / DEAD, bytes(len(live)))
        self._where = {bytes(cid).decode("utf-8"): n for n, cid in enumerate(ids[live])}
        state = {**state, "rows": len(live)}
        self._write_state(state)
        return state

    def _write_state(self, state: dict[str, Any]) -> None:
        _replace(self.folder / STATE, json.dumps(state).encode("utf-8"))


def _mapped(path: Path, dtype: Any, shape: tuple[int, ...]) -> Any:
    """`path` mapped read-only as an array of `shape`; ValueError when the file is shorter than that."""
    import numpy as np

    if not all(shape):
        return np.zeros(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)


def _replace(path: Path, data: bytes) -> None:
    """Write `path` whole and atomically (a temporary file beside it, then a rename), with the mode a file
    made in its folder gets (a temporary file is private, and a team's shared data dir needs the group's bits)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), path.parent.stat().st_mode & 0o666)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
