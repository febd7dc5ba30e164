"""An .npy file written piece by piece: parts are appended to a raw spill file, then copied behind numpy's header.

`np.save` needs the whole array in memory. A merged segment at 1M chunks holds 135M postings, and its postings
file, built as lists of arrays and then one concatenated copy of each, peaked at 4.1 GiB (docs/benchmarks.md).
Here memory holds one appended part, or one slice of `SLICE_ITEMS` while the file is finished. The header is
numpy's own (`numpy.lib.format`), so the file is byte for byte what `np.save` writes of the same array.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from ragtui import heavy

heavy.load("numpy")  # first, so that this module's imports of it are lookups (ragtui/heavy.py)
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

SLICE_ITEMS = 1 << 22      # items copied at a time when the file is finished (16 MiB of int32)


class NpyStream:
    """A one-dimensional array of `dtype` appended part by part to `<folder>/.<name>.spill` (a dot name, which
    Whoosh's file cleaner leaves alone); `finish` writes the .npy, `discard` (or leaving a `with`) removes the
    spill."""

    def __init__(self, folder: Path, name: str, dtype: npt.DTypeLike) -> None:
        self.dtype = np.dtype(dtype)
        self.count = 0
        self.spill = folder / f".{name}.spill"
        self._out: IO[bytes] | None = open(self.spill, "wb")  # noqa: SIM115 - closed by finish or discard

    def __enter__(self) -> NpyStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()

    def append(self, part: npt.NDArray[Any]) -> None:
        assert self._out is not None, "appended after finish or discard"
        np.ascontiguousarray(part, self.dtype).tofile(self._out)
        self.count += len(part)

    def finish(self, path: Path, dtype: npt.DTypeLike | None = None) -> None:
        """Write `path`: the .npy of everything appended, cast to `dtype` (the appended type by default)."""
        assert self._out is not None, "finished twice, or after discard"
        self._out.close()
        self._out = None
        out_type = self.dtype if dtype is None else np.dtype(dtype)
        header = np.lib.format.header_data_from_array_1_0(np.zeros(0, out_type))
        header["shape"] = (self.count,)
        with open(self.spill, "rb") as spilled, open(path, "wb") as out:
            np.lib.format.write_array_header_1_0(out, header)
            left = self.count
            while left:
                part = np.fromfile(spilled, self.dtype, min(left, SLICE_ITEMS))
                part.astype(out_type, copy=False).tofile(out)
                left -= len(part)
        self.discard()

    def discard(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None
        self.spill.unlink(missing_ok=True)
