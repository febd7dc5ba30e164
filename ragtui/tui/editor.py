"""The user's editor ($VISUAL, else $EDITOR) on a file: a long question written there, an answer or an export read.

The app suspends while the editor runs in the terminal (Textual's App.suspend) and resumes after it. An app
with no terminal of its own behind it (headless) runs the editor as is, which suits an editor with its own
window (`code --wait`); a browser session (`ragtui serve`) cannot suspend, and says so. Every failure is one
line for a notice: no editor set, one that cannot start, one that exits with an error.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from textual.app import App, SuspendNotSupported

from ragtui.paths import SMALL_FILE_BYTES, UnreadableFile, read_small_text


class EditorFailed(Exception):
    """Why the editor did not run or did not finish well: one line for a notice."""


def editor_command(env: Mapping[str, str]) -> list[str]:
    """$VISUAL, else $EDITOR, split as a shell would split it ("code --wait"); EditorFailed if neither is set."""
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            try:
                return shlex.split(value)
            except ValueError as exc:
                raise EditorFailed(f"${name} cannot be read as a command ({exc}): {value!r}") from None
    raise EditorFailed("No editor: set $VISUAL or $EDITOR (e.g. export EDITOR=nano).")


def run_editor(app: App[object], path: Path, env: Mapping[str, str] | None = None) -> None:
    """Open `path` in the user's editor and wait for it to close."""
    command = editor_command(os.environ if env is None else env)
    try:
        if app.is_headless:
            result = subprocess.run([*command, str(path)], check=False, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            with app.suspend():
                result = subprocess.run([*command, str(path)], check=False)
    except SuspendNotSupported:
        raise EditorFailed("An editor needs the terminal, and this session has none (a browser?).") from None
    except OSError as exc:
        raise EditorFailed(f"The editor {command[0]!r} could not start: {exc.strerror or exc}.") from None
    if result.returncode:
        raise EditorFailed(f"The editor {command[0]!r} exited with status {result.returncode}; nothing was read back.")


@contextmanager
def _written(text: str, suffix: str) -> Iterator[Path]:
    """A private temporary file holding `text` (mkstemp: mode 0600), removed when the block ends."""
    handle, name = tempfile.mkstemp(prefix="ragtui-", suffix=suffix)
    path = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        yield path
    finally:
        path.unlink(missing_ok=True)


def edit_text(app: App[object], text: str, suffix: str = ".md") -> str:
    """`text` edited by the user: written to a private temporary file, the editor run on it, read back (at most
    64 KiB, as any small file the user names: paths.read_small_text), the file removed."""
    with _written(text, suffix) as path:
        run_editor(app, path)
        try:
            return read_small_text(path)
        except UnreadableFile:
            raise EditorFailed(f"The edited text could not be read back: at most {SMALL_FILE_BYTES // 1024} KiB "
                               "of UTF-8 text.") from None


def show_text(app: App[object], text: str, suffix: str = ".md") -> None:
    """`text` opened in the user's editor to read (or save elsewhere); what the editor changes is not read back."""
    with _written(text, suffix) as path:
        run_editor(app, path)
