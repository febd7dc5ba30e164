"""Input that names nothing or means nothing is refused with one usage error (exit 2), never taken silently:
an ingest of a path that does not exist, a filter of an unknown kind, a [keys] table start-up would refuse.
Through the real CLI in subprocesses, against the fake Ollama on loopback."""

from __future__ import annotations

from pathlib import Path

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama


def test_an_ingest_of_a_path_that_names_nothing_is_a_usage_error_and_creates_no_collection(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pump.txt").write_text("A centrifugal pump spins an impeller inside its casing. " * 4)
    missing = tmp_path / "nonexistent"

    alone = cli(tmp_path, fake_ollama.url, "ingest", str(missing), "-c", "x")
    assert alone.returncode == 2, alone.stderr
    assert alone.stderr.splitlines() == [f"ragtui: no such file or folder: {missing}; nothing was ingested"]
    beside = cli(tmp_path, fake_ollama.url, "ingest", str(docs), str(missing), "-c", "y")   # a typo beside a folder
    assert beside.returncode == 2 and f"no such file or folder: {missing}" in beside.stderr, beside.stderr

    collections = tmp_path / "data" / "collections"
    assert not (collections / "x").exists() and not (collections / "y").exists()
    listed = cli(tmp_path, fake_ollama.url, "collections", "list")
    assert listed.returncode == 0 and "x" not in listed.stdout.split() and "y" not in listed.stdout.split()
    assert not fake_ollama.calls("/api/embed")                        # nothing was read, nothing embedded


def test_a_filter_of_an_unknown_kind_is_a_usage_error_naming_the_kinds(tmp_path: Path,
                                                                      fake_ollama: FakeOllama) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "foo.md").write_text("# Pumps\n\nA centrifugal pump spins an impeller inside its casing.\n")
    assert cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", "docs").returncode == 0
    for command in ("query", "ask"):
        for spec in ("pth:foo", "page:100-200"):
            refused = cli(tmp_path, fake_ollama.url, command, "centrifugal pump", "-c", "docs", "-f", spec)
            assert refused.returncode == 2, (command, spec, refused.stderr)
            kind = spec.split(":")[0]
            assert refused.stderr.splitlines() == [
                f"ragtui: unknown filter kind {kind!r} in {spec!r}: the kinds are path, heading; "
                f"write path:{spec} for a path glob that holds ':'"], refused.stderr
    glob = cli(tmp_path, fake_ollama.url, "query", "centrifugal pump", "-c", "docs", "-f", "path:foo.md:x")
    assert glob.returncode == 0, glob.stderr                         # a glob that holds ":" is written so
