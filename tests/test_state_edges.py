"""State edges found by the adversarial pass (issue 10): each reproduced through the real CLI in a
subprocess against the fake Ollama on loopback, with real files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_ollama import FakeOllama
from tests.tui.test_session import CORPUS

ROOT = Path(__file__).resolve().parents[1]


def cli(tmp_path: Path, host: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-m", "ragtui", "--data-dir", str(tmp_path / "data"), "--ollama-host",
                           host, "--set", "synonyms.enabled=false", "--set", "llm.model=chat", *args],
                          capture_output=True, text=True, env=env, timeout=timeout, check=False)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in CORPUS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_slow_api_show_names_the_setting_that_controls_its_timeout(tmp_path: Path, fake_ollama: FakeOllama,
                                                                    corpus: Path) -> None:
    assert cli(tmp_path, fake_ollama.url, "ingest", str(corpus), "-c", "docs").returncode == 0
    fake_ollama.show_delay = 3.0
    done = cli(tmp_path, fake_ollama.url, "--set", "ollama.timeout=0.5", "ask", "how do pumps start")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "pumps.md" in done.stdout                                   # retrieval still ran
    assert (f"Ollama at {fake_ollama.url} did not answer /api/show for chat within 0.5 s (ollama.timeout)"
            in done.stderr)
