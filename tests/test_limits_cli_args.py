"""Numbers the user types that name a stored record (a session id, a source's [N], a listing limit) are checked
by the argument parser: one past SQLite's 64-bit INTEGER had raised OverflowError (or "datatype mismatch")
from deep in the history store. Now every one is a usage error, exit 2, before anything opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_run import cli

HUGE = "99999999999999999999999"


@pytest.mark.parametrize("args", [
    ("history", "show", HUGE), ("history", "delete", HUGE), ("history", "export", HUGE),
    ("history", "reannotate", HUGE), ("history", "reannotate", "1", "--source", HUGE),
    ("history", "rescue", HUGE, "1"), ("history", "drop", "1", HUGE), ("history", "list", "-n", HUGE),
    ("ask", "--continue", "--session", HUGE), ("ask", "--follow-up", "and then?", "--session", HUGE),
    ("ask", "--resynthesize", "--session", HUGE), ("history", "show", "0"), ("history", "show", "-3"),
])
def test_a_number_out_of_range_is_a_usage_error(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = cli(tmp_path, "http://127.0.0.1:9", *args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Error" not in done.stderr.replace("error:", "")
    assert "expected a whole number from 1 to 9223372036854775807" in done.stderr.splitlines()[-1], done.stderr


def test_the_largest_id_is_looked_up(tmp_path: Path) -> None:
    done = cli(tmp_path, "http://127.0.0.1:9", "history", "show", str(2**63 - 1))
    assert done.returncode == 1 and done.stderr.strip().endswith(f"no session {2**63 - 1} in "
                                                                 f"{tmp_path / 'data' / 'history.sqlite3'}")
