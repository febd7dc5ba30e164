"""Small CLI things users hit: query text required, --limit, a closed pipe, the config path named, the
ingest progress line fitting the terminal."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.cli.ingest_cmd import format_progress
from ragtui.config import Settings
from ragtui.events import IngestProgress
from tests.fake_ollama import FakeOllama
from tests.test_query_eval_cli import collection, flags  # noqa: F401

REPO = Path(__file__).resolve().parents[1]


def test_an_empty_query_is_refused(tmp_path: Path, fake_ollama: FakeOllama,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama), "query", "  "]) == 2
    assert "query needs some text" in capsys.readouterr().err


def test_query_limit_prints_the_best_n(collection: Settings, fake_ollama: FakeOllama, tmp_path: Path,  # noqa: F811
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama), "query", "valve seats pumps", "--json"]) == 0
    everything = json.loads(capsys.readouterr().out)
    assert len(everything["nodes"]) >= 2
    assert main([*flags(tmp_path, fake_ollama), "query", "valve seats pumps", "--json", "--limit", "1"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["nodes"] == everything["nodes"][:1] and one["hits_total"] == len(everything["nodes"])
    assert main([*flags(tmp_path, fake_ollama), "query", "valve seats pumps", "--limit", "1"]) == 0
    assert f"({len(everything['nodes']) - 1} more not shown: --limit 1)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*flags(tmp_path, fake_ollama), "query", "valves", "--limit", "0"])


def test_ask_limit_prints_n_sources_and_uses_all(collection: Settings, fake_ollama: FakeOllama,  # noqa: F811
                                                 tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama), "--set", "llm.model=chat", "ask", "valve seats pumps",
                 "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "  [1] " in out and "  [2] " not in out and "more not shown: --limit 1" in out


def test_config_show_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    done = subprocess.run(f"{sys.executable} -m ragtui --config {os.devnull} config show | head -1",
                          shell=True, capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.stdout.startswith("# defaults:") and done.stderr == ""


def test_help_and_doctor_name_the_config_file_xdg_points_at(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "COLUMNS": "400"}   # --help unwrapped
    expected = str(tmp_path / "xdg" / "ragtui" / "config.toml")
    shown = subprocess.run([sys.executable, "-m", "ragtui", "--help"], capture_output=True, text=True, env=env,
                           cwd=REPO, timeout=60).stdout
    assert f"(default: {expected}, which follows XDG_CONFIG_HOME)" in shown
    doctor = subprocess.run([sys.executable, "-m", "ragtui", "--data-dir", str(tmp_path / "d"), "--ollama-host",
                             "http://127.0.0.1:9", "doctor"], capture_output=True, text=True, env=env, cwd=REPO,
                            timeout=60).stdout
    assert doctor.splitlines()[0] == f"config file: {expected} (not there: shipped defaults only)"


def test_the_ingest_progress_line_fits_its_width() -> None:
    event = IngestProgress(files_done=7, files_total=20, chunks=312, embedded=280, embed_rate=41.5, eta_s=95.0,
                           current="_sources/whatsnew/a/very/long/folder/name/3.6.rst.txt")
    for width in (60, 75, 100, 200):
        line = format_progress(event, width)
        assert len(line) <= width and line.startswith("7/20 files  312 chunks  280 embedded")
    assert format_progress(event, 100).endswith("3.6.rst.txt") and "…" in format_progress(event, 100)
    assert "ETA 1:35" in format_progress(event, 60)


def test_progress_counts_chunks_from_the_start_and_the_eta_covers_what_is_left(
        make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    import asyncio

    from ragtui.workspace import Workspace

    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(30):
        (folder / f"f{i:02d}.txt").write_text(f"File {i} is about pump {i} and its seals. " * 20)
    settings = make_settings()

    async def run() -> list[IngestProgress]:
        async with Workspace(settings) as workspace:
            return [e async for e in workspace.ingest([folder], "c") if isinstance(e, IngestProgress)]

    progress = asyncio.run(run())
    reading = [p for p in progress if p.files_done < p.files_total]
    assert reading and all(p.chunks >= p.files_done for p in reading)     # counted before any batch commits
    assert progress[-1].chunks == progress[-1].embedded and progress[-1].eta_s == 0.0


def test_a_resumed_ingest_counts_the_chunks_it_embeds(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """The first run cannot reach the embedder (keyword index only); the second finds both files unchanged
    and embeds their chunks: its progress counts those chunks, not 0 chunks beside N embedded."""
    from tests.cli_run import cli

    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("pumps", "valves"):
        (docs / f"{name}.txt").write_text(f"The {name} of the water works are checked each spring. " * 30)
    size = ("--set", "chunk.size_tokens=32", "--set", "embed.retries=1")
    first = cli(tmp_path, "http://127.0.0.1:9", *size, "ingest", str(docs), "-c", "works")
    assert "0 embedded" in first.stdout, first.stdout + first.stderr
    again = cli(tmp_path, fake_ollama.url, *size, "ingest", str(docs), "-c", "works")
    assert again.returncode == 0, again.stderr
    last = [line for line in again.stdout.splitlines() if line.startswith("progress: ")][-1]
    files, chunks, embedded = (int(n) for n in re.findall(r"^progress: 2/(\d) files  (\d+) chunks  (\d+) embedded",
                                                          last)[0])
    assert files == 2 and chunks == embedded > 2, last
