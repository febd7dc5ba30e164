"""An .npy file written piece by piece is byte for byte what np.save writes of the whole array, whatever the
slice size of its finishing copy; its spill file never outlives it."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from ragtui.stores import npy_stream
from ragtui.stores.npy_stream import NpyStream


def saved(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


@pytest.mark.parametrize("slice_items", [1, 7, 1 << 22])
def test_the_file_is_what_np_save_writes_of_the_parts_joined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           slice_items: int) -> None:
    monkeypatch.setattr(npy_stream, "SLICE_ITEMS", slice_items)
    rng = np.random.default_rng(5)
    parts = [rng.integers(0, 60_000, size, dtype=np.int64) for size in (0, 1, 13, 0, 40, 3)]
    for dtype in (None, np.uint16):
        with NpyStream(tmp_path, "a.npy", np.int32) as stream:
            for part in parts:
                stream.append(part)
            stream.finish(tmp_path / "a.npy", dtype)
        joined = np.concatenate(parts).astype(np.int32)
        expected = joined if dtype is None else joined.astype(dtype)
        assert (tmp_path / "a.npy").read_bytes() == saved(expected)
        assert np.array_equal(np.load(tmp_path / "a.npy"), expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy"]     # no spill left


def test_an_empty_stream_is_an_empty_array(tmp_path: Path) -> None:
    with NpyStream(tmp_path, "e.npy", np.float32) as stream:
        stream.finish(tmp_path / "e.npy")
    assert (tmp_path / "e.npy").read_bytes() == saved(np.zeros(0, np.float32))


def test_a_stream_left_by_an_error_removes_its_spill(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), NpyStream(tmp_path, "b.npy", np.int32) as stream:
        stream.append(np.arange(10))
        assert stream.spill.exists()
        raise RuntimeError("the decoding failed")
    assert list(tmp_path.iterdir()) == []
