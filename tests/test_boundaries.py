"""Nothing escapes the data dir: every entry point takes a collection name through the one rule first.

A fuzz test feeds the CLI's name arguments arbitrary text (path separators, `..`,
absolute paths, controls, Unicode) and checks that nothing outside the data dir is
created, changed or removed, and that a refused name is one line with exit code 2
(argparse's usage plus one error for option-like text such as "-x").
Another feeds every path argument (config, ingest, queries file, eval dataset and
saved runs, WordNet file, prompt file, export file) hostile text (NUL bytes, lone
surrogates, names too long, option-like text): an error is one line (argparse's
usage plus error for option-like text), never a traceback, and nothing changes.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtui.cli import main
from ragtui.library import NAME_RE

ESCAPES = ["../../victim", "../victim", "/abs/victim", "victim/../../x", ".", "..", "", "a/b", "[/]", "a\x00b",
           "-", "-:", "--x", "_x", "x" * 64, "ok\n", "ünï"]


def _tree(root: Path) -> set[tuple[str, bytes]]:
    return {(str(p.relative_to(root)), p.read_bytes() if p.is_file() else b"") for p in root.rglob("*")}


def _run(base: Path, *args: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(["--data-dir", str(base / "data"), "--ollama-host", "http://127.0.0.1:9",
                         "--set", "synonyms.enabled=false", *args])
        except SystemExit as exc:          # argparse refusing an option-like name
            code = int(exc.code or 0)
    return code, err.getvalue()


def _commands(base: Path, name: str) -> list[list[str]]:
    victim = str(base / "victim")
    name = name.replace("/abs/victim", victim)
    return [["collections", "delete", name, "--yes"], ["collections", "info", name],
            ["collections", "create", name], ["query", "-c", name, "pumps"],
            ["ingest", str(base / "empty"), "-c", name], ["ask", "--no-annotate", "-c", name, "pumps"]]


def _check(base: Path, name: str) -> None:
    (base / "victim").mkdir(exist_ok=True)
    (base / "victim" / "keep.txt").write_text("keep")
    (base / "empty").mkdir(exist_ok=True)
    outside = {p for p in base.iterdir() if p.name != "data"}
    before = {p: _tree(p) for p in outside}
    for args in _commands(base, name):
        code, err = _run(base, *args)
        if not NAME_RE.fullmatch(name):
            assert code == 2, (args, err)
            if err.startswith("usage: ragtui"):      # argparse took option-like text ("-x") for an option
                assert name.startswith("-") and " error: " in err.splitlines()[-1], (args, err)
            else:
                assert err.count("\n") == 1 and "invalid collection name" in err, (args, err)
    assert {p for p in base.iterdir() if p.name != "data"} == outside
    assert {p: _tree(p) for p in outside} == before
    data = base / "data"
    if data.exists():
        for path in data.rglob("*"):
            assert path.resolve().is_relative_to(data.resolve())


@pytest.mark.parametrize("name", ESCAPES)
def test_names_that_would_leave_the_data_dir_are_refused_everywhere(tmp_path: Path, name: str) -> None:
    _check(tmp_path, name)


PARTS = st.sampled_from(["..", ".", "victim", "/", "abs", "x", "\\", "~"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=80), st.lists(PARTS, max_size=6).map("/".join)))
def test_fuzzed_collection_names_never_touch_anything_outside_the_data_dir(name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check(Path(tmp), name)


def test_a_collection_folder_linked_outside_the_data_dir_is_never_used(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "collection.json").write_text('{"name": "evil", "state": "empty"}')
    (tmp_path / "data" / "collections").mkdir(parents=True)
    (tmp_path / "data" / "collections" / "evil").symlink_to(victim)
    before = _tree(victim)
    code, err = _run(tmp_path, "ingest", str(tmp_path), "-c", "evil")
    assert code == 1 and "leading outside" in err and "links are never followed" in err, err
    assert _run(tmp_path, "collections", "info", "evil") == (0, "")      # says "damaged", with why
    assert _run(tmp_path, "collections", "delete", "evil", "--yes") == (0, "")
    assert not (tmp_path / "data" / "collections" / "evil").is_symlink()  # the link went, not what it led to
    assert _tree(victim) == before


HOSTILE_PATHS = ["a\x00b", "\ud800x", "x" * 300, "x/" * 3000, "-", "--", "~nobody/x", "~0", "victim/keep.txt", "..",
                 "/", "", " ", "\n", "\x1b]0;t\x07", "\udcff.toml"]


def _path_commands(path: str) -> list[list[str]]:
    """Every command-line argument that names a file or folder to read (or, for export, to write). The ingest
    path is kept from naming a real folder ("/" or ".." would ingest the machine): its text still goes through."""
    return [["--config", path, "config", "show"], ["ingest", "missing-" + path, "-c", "docs"],
            ["query", "--queries", path],
            ["eval", "--dataset", path], ["eval", "--compare-runs", path, path],
            ["wordnet", "install", "--from", path], ["history", "reannotate", "1", "--prompt-file", path],
            ["--set", "llm.model=chat", "--set", f"annotation.prompt_file={path}", "ask", "pumps"],
            ["history", "export", "1", "-o", path]]


def _check_paths(base: Path, path: str) -> None:
    (base / "victim").mkdir(exist_ok=True)
    (base / "victim" / "keep.txt").write_text("keep")
    outside = {p for p in base.iterdir() if p.name != "data"}
    before = {p: _tree(p) for p in outside}
    cwd = os.getcwd()
    os.chdir(base)                      # relative paths land in the test's folder
    try:
        for args in _path_commands(path):
            code, err = _run(base, *args)
            assert code in (0, 1, 2) and "Traceback" not in err, (args, code, err)
            if err.startswith("usage: ragtui"):      # argparse refused option-like text: its usage, then one error
                assert code == 2 and " error: " in err.splitlines()[-1], (args, err)
            elif code == 2:                         # refused: one line (a run that went ahead may say more)
                assert err.count("\n") == 1, (args, err)
    finally:
        os.chdir(cwd)
    assert {p for p in base.iterdir() if p.name != "data"} == outside
    assert {p: _tree(p) for p in outside} == before


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_hostile_path_arguments_are_one_error_never_a_crash(tmp_path: Path, path: str) -> None:
    _check_paths(tmp_path, path)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=60), st.lists(PARTS, max_size=6).map("/".join), st.sampled_from(HOSTILE_PATHS)))
def test_fuzzed_path_arguments_are_one_error_never_a_crash(path: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check_paths(Path(tmp), path)
