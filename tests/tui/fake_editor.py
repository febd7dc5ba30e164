"""A fake $EDITOR that is a real program, for the tests of the TUI's editor keys."""

from __future__ import annotations

import sys
from pathlib import Path


def fake_editor(tmp_path: Path, name: str, *, writes: str | None = None, status: int = 0) -> Path:
    """An editor program: it copies what it was given to `<name>.seen`, then writes `writes` (if given) into the
    file and exits with `status`."""
    script = tmp_path / name
    seen = tmp_path / f"{name}.seen"
    script.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, sys\n"
        "target = pathlib.Path(sys.argv[-1])\n"
        f"pathlib.Path({str(seen)!r}).write_text(target.read_text(encoding='utf-8'), encoding='utf-8')\n"
        + (f"target.write_text({writes!r}, encoding='utf-8')\n" if writes is not None else "")
        + f"sys.exit({status})\n", encoding="utf-8")
    script.chmod(0o755)
    return script
