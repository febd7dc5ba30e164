"""The warm start of the CLI tests (tests/cli_run.py, tests/cli_zygote.py) stands in for a fresh `python -m
ragtui`: the same exit status, stdout and stderr, the environment and working directory of the call, and an
error that escapes the CLI ends the process as it would a fresh one."""

from __future__ import annotations

import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.cli_run import ROOT, cli, fresh_cli, run_ragtui


@pytest.mark.parametrize("args", [("config", "show"), ("--set", "retrieve.top_k=abc", "config", "show"),
                                  ("collections", "list"), ("no-such-command",)])
def test_a_warm_start_answers_as_a_fresh_one(tmp_path: Path, args: tuple[str, ...]) -> None:
    warm = cli(tmp_path, "http://127.0.0.1:9", *args)
    fresh = fresh_cli(tmp_path, "http://127.0.0.1:9", *args)
    assert (warm.returncode, warm.stdout, warm.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_the_child_takes_the_callers_environment_and_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config.toml").write_text("[retrieve]\ntop_k = 37\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAGTUI_RETRIEVE_TOP_K": "29"}
    done = run_ragtui([sys.executable, "-m", "ragtui", "--config", "config.toml", "config", "show"], env)
    assert done.returncode == 0, done.stderr
    assert re.search(r"retrieve\.top_k +29 ", done.stdout)       # the variable of this call
    again = run_ragtui([sys.executable, "-m", "ragtui", "--config", "config.toml", "config", "show"],
                       {**os.environ, "PYTHONPATH": str(ROOT)})
    assert re.search(r"retrieve\.top_k +37 ", again.stdout)      # the file in its folder; nothing of the
    #                                                               previous child's environment is left


def test_children_started_at_once_from_several_threads_each_get_their_own_answer(tmp_path: Path) -> None:
    def show(n: int) -> tuple[int, str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "RAGTUI_RETRIEVE_TOP_K": str(n)}
        done = run_ragtui([sys.executable, "-m", "ragtui", "--config", os.devnull, "config", "show"], env)
        found = re.search(r"retrieve\.top_k +(\d+) ", done.stdout)
        return done.returncode, found.group(1) if found else done.stderr

    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(show, range(20, 32))) == [(0, str(n)) for n in range(20, 32)]


def test_the_child_takes_the_callers_umask(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("The float valve refills the cistern.\n")
    cli(tmp_path, "http://127.0.0.1:9", "collections", "list")     # the warm interpreter starts with umask 022
    old = os.umask(0o002)
    try:
        done = cli(tmp_path, "http://127.0.0.1:9", "ingest", str(tmp_path / "docs"), "-c", "team")
    finally:
        os.umask(old)
    assert (tmp_path / "data" / "collections" / "team" / "ingest.lock").stat().st_mode & 0o777 == 0o664, done.stderr
