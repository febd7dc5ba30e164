"""A prompt file the user names (`history reannotate --prompt-file`, `annotation.prompt_file`) is read only when
it is a small regular file: /dev/zero had been read until memory ran out, a FIFO had hung forever, and a 300 MB
file had been sent in every annotation request. Each is now one line naming the file, exit 2, before any call."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli_run import cli

TEMPLATE = "Quote from CONTENT what answers QUERY.\n"


def hostile(tmp_path: Path, kind: str) -> Path:
    if kind == "zero":
        return Path("/dev/zero")
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)                      # no writer ever opens it: reading it would wait forever
    elif kind == "big":
        with path.open("w") as f:            # a real template, padded far past the cap
            f.write(TEMPLATE + "x" * (300 * 2**20))
    elif kind == "folder":
        path.mkdir()
    return path


REASONS = {"zero": "is not a regular file", "fifo": "is not a regular file", "folder": "is not a regular file",
           "big": "is 300.0 MiB, more than the 64 KiB a prompt file may hold"}


@pytest.mark.parametrize("kind", sorted(REASONS))
@pytest.mark.parametrize("how", ["flag", "config"])
def test_a_prompt_file_that_is_not_a_small_regular_file_is_one_line(tmp_path: Path, kind: str, how: str) -> None:
    path = hostile(tmp_path, kind)
    if how == "flag":
        done = cli(tmp_path, "http://127.0.0.1:9", "history", "reannotate", "1", "--prompt-file", str(path),
                   timeout=60)
    else:
        done = cli(tmp_path, "http://127.0.0.1:9", "--set", f"annotation.prompt_file={path}", "ask", "pumps?",
                   timeout=60)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line == (f"ragtui: config error: annotation.prompt_file = {str(path)!r}: {path} {REASONS[kind]}"), line


def test_a_template_at_the_cap_is_read(tmp_path: Path) -> None:
    path = tmp_path / "prompt.txt"
    path.write_text(TEMPLATE + "x" * (64 * 1024 - len(TEMPLATE)))
    done = cli(tmp_path, "http://127.0.0.1:9", "history", "reannotate", "1", "--prompt-file", str(path))
    assert done.returncode == 1 and done.stderr.strip().endswith("no session 1 in "
                                                                 f"{tmp_path / 'data' / 'history.sqlite3'}")
