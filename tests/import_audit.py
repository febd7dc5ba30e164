"""An audit of first imports, for the drivers that run in a fresh interpreter: every time one of ragtui's
modules is the first to import a heavy library's module (not yet in sys.modules) outside `ragtui.heavy.load`,
it is recorded with the thread and the ragtui line that did it. Such an import bypasses the one import path
(ragtui/heavy.py) and can race with a thread inside it, whether or not this run happened to hit the race.
A heavy library's own later imports (its lazy submodules) are its own business and are not recorded."""

from __future__ import annotations

import sys
import threading
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import FrameType

HEAVY_PACKAGES = ("numpy", "whoosh", "wn", "chromadb", "llama_index", "pymupdf")
RAGTUI = Path(__file__).resolve().parents[1] / "ragtui"
HEAVY_PY = RAGTUI / "heavy.py"


def _importer(frame: FrameType | None) -> FrameType | None:
    """The frame of the import statement: the first one outside the import machinery."""
    while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                                 or frame.f_code.co_filename == __file__):
        frame = frame.f_back
    return frame


def _inside_load(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename == str(HEAVY_PY):
            return True
        frame = frame.f_back
    return False


class Audit(MetaPathFinder):
    def __init__(self) -> None:
        self.bypasses: list[str] = []

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname.split(".", 1)[0] in HEAVY_PACKAGES:
            frame = _importer(sys._getframe(1))
            where = Path(frame.f_code.co_filename) if frame is not None else Path()
            if where.is_relative_to(RAGTUI) and not _inside_load(frame):
                self.bypasses.append(f"{fullname} first imported by {where.relative_to(RAGTUI.parent)}:"
                                     f"{frame.f_lineno if frame else 0} in thread {threading.current_thread().name}")
        return None          # the normal finders find it


def install() -> Audit:
    audit = Audit()
    sys.meta_path.insert(0, audit)
    return audit
