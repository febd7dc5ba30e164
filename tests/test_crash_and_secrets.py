"""A TUI crash is never exit 0, and the API key is never printed: not in Textual's crash dump (which shows
every frame's locals), not by `config show` (text or JSON), `doctor`, `ask --json` or the history file.

The crash runs the real entry point (`ragtui.cli.main`, no sub-command: the TUI) in a subprocess on a
pseudo-terminal, with one fault injected in that process only: the app's mount handler raises while the
settings (and the key) are locals of the failing frame, as they were when the key leaked.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

from ragtui.config import Settings, load_settings
from ragtui.config_sections import Secret
from ragtui.sanitize import clean
from tests.cli_run import ROOT, run_ragtui
from tests.fake_ollama import FakeOllama, Reply

KEY = "sk-live-7f3a9c0d2e4b6a8f1c3e5d7b9a0f2e4c"
CRASHING_TUI = """
import sys
from ragtui.tui.app import RagtuiApp

def crash(self):
    settings = self.settings
    key = settings.llm.api_key
    raise RuntimeError("forced crash for the test")

RagtuiApp.on_mount = crash
from ragtui.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _on_a_terminal(args: list[str], env: dict[str, str], timeout: float = 120) -> tuple[int, str]:
    """Run `python -c CRASHING_TUI args` with stdin/stdout/stderr on a 100x30 pseudo-terminal; (code, output)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-c", CRASHING_TUI, *args], stdin=slave, stdout=slave, stderr=slave,
                            env=env, start_new_session=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:          # EIO: the child closed its side
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_a_crash_of_the_tui_exits_non_zero_with_one_line_and_no_key(tmp_path: Path) -> None:
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    code, output = _on_a_terminal(["--config", os.devnull, "--data-dir", str(tmp_path / "data"),
                                   "--ollama-host", "http://127.0.0.1:9", "--set", f"llm.api_key={KEY}"], env)
    output = clean(output)                                        # Rich colours the dump: compare its text
    assert code != 0, output[-3000:]
    assert "forced crash for the test" in output                 # Textual's dump is still there
    assert "ragtui: the terminal UI stopped on an unexpected error (RuntimeError: forced crash for the test)" \
        in output
    assert "key = Secret('***')" in output or "Secret('***')" in output, output[-3000:]   # the local, masked
    assert KEY not in output and KEY[:12] not in output


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_ragtui([sys.executable, "-m", "ragtui", *args], {**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


def test_the_key_is_never_printed_or_stored(tmp_path: Path, make_settings: Callable[..., Settings],
                                            fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    base = ["--config", os.devnull, "--data-dir", str(settings.data_dir),
            "--ollama-host", fake_ollama.url, "--set", f"llm.api_key={KEY}", "--set", "llm.model=chat",
            "--set", "synonyms.enabled=false"]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pumps.md").write_text("Centrifugal pumps start at 3 bar once primed.\n")
    (docs / "lunch.md").write_text("The cafeteria serves soup on Mondays.\n")
    fake_ollama.responder = lambda body: Reply.text('"Centrifugal pumps start at 3 bar" yes.'
                                                    if "EXTRACT" in body["messages"][-1]["content"]
                                                    else "They start at 3 bar [1].")
    runs = [_cli(*base, "config", "show"), _cli(*base, "config", "show", "--json"), _cli(*base, "doctor"),
            _cli(*base, "ingest", str(docs), "-c", "docs"),
            _cli(*base, "ask", "-c", "docs", "--json", "how do centrifugal pumps start"),
            _cli(*base, "history", "show", "1"), _cli(*base, "history", "export", "1"),
            _cli(*base, "--set", "llm.provider=openai", "--set", "llm.base_url=http://127.0.0.1:9/v1", "doctor")]
    for proc in runs:
        assert KEY not in proc.stdout + proc.stderr, proc.args
    shown = json.loads(runs[1].stdout)["llm.api_key"]
    assert shown == {"value": "***", "origin": "--set"}
    assert json.loads(runs[4].stdout)["answer"] == "They start at 3 bar [1]."
    stored = b"".join(p.read_bytes() for p in settings.data_dir.rglob("*") if p.is_file())
    assert KEY.encode() not in stored and b'"llm.api_key": "***"' in stored


def test_the_secret_type_masks_and_reveals_only_on_request(tmp_path: Path) -> None:
    settings = load_settings(user_file=tmp_path / "none.toml", env={"RAGTUI_LLM_API_KEY": KEY})
    key = settings.llm.api_key
    assert isinstance(key, Secret) and key.reveal() == KEY and bool(key)
    assert KEY not in repr(settings) + str(key) + repr(key) + f"{key}" + repr(settings.flat())
    assert settings.replace(llm__api_key="other").llm.api_key.reveal() == "other"
    assert not load_settings(user_file=tmp_path / "none.toml", env={}).llm.api_key
