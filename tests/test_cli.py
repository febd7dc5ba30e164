from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.config import Settings
from tests.fake_ollama import FakeOllama
from tests.mini_wordnet import LEXICON


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragtui", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def base_flags(tmp_path: Path, host: str) -> list[str]:
    return ["--config", os.devnull, "--data-dir", str(tmp_path / "data"),
            "--ollama-host", host]


def test_version_and_help() -> None:
    assert run_cli("--version").stdout.strip().startswith("ragtui ")
    out = run_cli("--help").stdout
    for command in ("doctor", "config", "wordnet"):
        assert command in out


def test_importing_cli_pulls_in_no_heavy_library() -> None:
    code = "import sys, ragtui.cli; print([m for m in ('llama_index', 'chromadb', 'pymupdf', 'wn', 'whoosh') " \
           "if any(k == m or k.startswith(m + '.') for k in sys.modules)])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_doctor_unreachable_exits_1_and_says_where_and_what(tmp_path: Path) -> None:
    proc = run_cli(*base_flags(tmp_path, "http://127.0.0.1:9"), "doctor")
    assert proc.returncode == 1
    assert "http://127.0.0.1:9" in proc.stdout and "ollama serve" in proc.stdout


def test_bad_env_value_exits_2_naming_the_key(tmp_path: Path) -> None:
    proc = run_cli(*base_flags(tmp_path, "http://127.0.0.1:9"), "doctor", env={"RAGTUI_RETRIEVE_TOP_K": "abc"})
    assert proc.returncode == 2
    assert "retrieve.top_k" in proc.stderr and proc.stderr.count("\n") == 1


def test_doctor_all_good(fake_ollama: FakeOllama, tmp_path: Path, mini_wordnet_file: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    flags = [*base_flags(tmp_path, fake_ollama.url), "--set", "llm.model=chat",
             "--set", "embed.extra_models=all-minilm", "--set", f"synonyms.lexicon={LEXICON}"]
    assert main([*flags, "wordnet", "install", "--from", str(mini_wordnet_file)]) == 0
    capsys.readouterr()
    assert main([*flags, "doctor"]) == 0
    out = capsys.readouterr().out
    assert "All good." in out
    assert "model all-minilm" in out and "model chat" in out and f"{LEXICON} installed" in out


def test_doctor_model_missing(fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = [*base_flags(tmp_path, fake_ollama.url), "--set", "llm.model=llama3.1:8b"]
    assert main([*flags, "doctor"]) == 1
    out = capsys.readouterr().out
    assert "ollama pull llama3.1:8b" in out
    assert "FAIL  wordnet" in out and "ragtui wordnet install" in out


def test_wordnet_install_from_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text("not xml")
    assert main([*base_flags(tmp_path, "http://127.0.0.1:9"), "wordnet", "install", "--from", str(bad)]) == 1
    assert "bad.xml" in capsys.readouterr().err


def test_config_show_prints_origins(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTUI_RETRIEVE_KEYWORD_WEIGHT", "0.2")
    assert main(["--config", os.devnull, "--set", "retrieve.top_k=9", "config", "show",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["retrieve.top_k"] == {"value": 9, "origin": "--set"}
    assert data["retrieve.keyword_weight"] == {"value": 0.2, "origin": "RAGTUI_RETRIEVE_KEYWORD_WEIGHT"}
    assert data["chunk.size_tokens"]["origin"] == "default (config.toml)"


def test_make_settings_fixture_points_at_fake(make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    assert make_settings().ollama.host == fake_ollama.url


def test_doctor_reports_unset_chat_model(fake_ollama: FakeOllama, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*base_flags(tmp_path, fake_ollama.url), "doctor"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  llm.model" in out and "not set" in out
    assert "ok    model nomic-embed-text" in out


@pytest.mark.parametrize("body", [b"<html>proxy error</html>", b"\xff\xfe", b"[1, 2]", b'{"models": "x"}',
                                  b'{"models": [null]}'])
def test_doctor_on_a_tags_answer_that_is_not_ollama_s_is_one_line_exit_1(
        fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str], body: bytes) -> None:
    fake_ollama.tags_body = body
    assert main([*base_flags(tmp_path, fake_ollama.url), "doctor"]) == 1
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "/api/tags" in line)
    assert fake_ollama.url in line and "Traceback" not in out
