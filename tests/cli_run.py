"""The real `ragtui` CLI in a subprocess, as a user runs it: its own HOME and data dir inside the test's folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def command(tmp_path: Path, host: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of `ragtui ARGS` against the Ollama at `host`, synonyms off, `chat` as the chat
    model (for a test that starts the process itself, to act while it runs)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home")}
    return [sys.executable, "-m", "ragtui", "--data-dir", str(tmp_path / "data"), "--ollama-host", host,
            "--set", "synonyms.enabled=false", "--set", "llm.model=chat", *args], env


def cli(tmp_path: Path, host: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`ragtui ARGS` against the Ollama at `host`, synonyms off, `chat` as the chat model."""
    argv, env = command(tmp_path, host, *args)
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)
