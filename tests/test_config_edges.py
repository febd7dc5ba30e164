"""Config edges: NaN and infinity refused for every float key (from --set, the environment and the TOML
file), `--config` naming a missing file, and a config file that is not UTF-8 or not TOML: one line naming
the key or the file, exit 2, no traceback (the last three through the real CLI in a subprocess)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from ragtui.config import SECTIONS, ConfigError, load_settings

ROOT = Path(__file__).resolve().parents[1]
FLOAT_KEYS = [f"{section}.{f.name}" for section, cls in SECTIONS.items()
              for f in dataclasses.fields(cls) if typing.get_type_hints(cls)[f.name] is float]


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home"),
           "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config")}
    return subprocess.run([sys.executable, "-m", "ragtui", "--data-dir", str(tmp_path / "data"), *args],
                          capture_output=True, text=True, env=env, timeout=60, check=False)


def test_there_are_float_keys_to_check() -> None:
    assert {"retrieve.min_score", "llm.temperature", "ollama.timeout", "retrieve.keyword_weight"} <= set(FLOAT_KEYS)


@pytest.mark.parametrize("origin", ["--set", "env", "file"])
def test_nan_and_infinity_are_refused_naming_the_key(tmp_path: Path, origin: str) -> None:
    user = tmp_path / "user.toml"
    for key in FLOAT_KEYS:
        section, name = key.split(".")
        for text in ("nan", "NaN", "inf", "-inf", "+inf"):
            env: dict[str, str] = {}
            flags: list[str] = []
            user.write_text("")
            if origin == "--set":
                flags = [f"{key}={text}"]
            elif origin == "env":
                env = {f"RAGTUI_{section.upper()}_{name.upper()}": text}
            else:
                user.write_text(f"[{section}]\n{name} = {text.lower()}\n")     # TOML's own nan and inf
            with pytest.raises(ConfigError) as info:
                load_settings(user_file=user, env=env, overrides=flags)
            message = str(info.value)
            assert message.startswith(f"config error: {key} = "), message
            assert "expected a finite number" in message, message
            assert (str(user) if origin == "file" else "--set" if origin == "--set" else "RAGTUI_") in message


def test_nan_through_the_cli_is_exit_2_in_one_line(tmp_path: Path) -> None:
    done = cli(tmp_path, "--set", "retrieve.min_score=nan", "config", "show")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["ragtui: config error: retrieve.min_score = nan (from --set): expected a "
                                        "finite number from 0 to 1"]


def test_a_missing_config_file_is_an_error_not_ignored(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    done = cli(tmp_path, "--config", str(missing), "config", "show")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"ragtui: config error: --config {missing}: no such file"]


@pytest.mark.parametrize(("content", "needle"), [
    (b"[retrieve]\ntop_k = 5  # caf\xe9\n", "is not UTF-8 text (line 2: byte 0xe9)"),
    (b"\xff\xfe[\x00r\x00", "is not UTF-8 text (line 1: byte 0xff)"),
    (b"[retrieve\ntop_k = 5\n", "is not valid TOML"),
])
def test_a_config_file_that_is_not_utf8_or_not_toml_is_one_line(tmp_path: Path, content: bytes,
                                                                 needle: str) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_bytes(content)
    for args in (["--config", str(bad)], []):
        if not args:                                   # the same file as the default user config
            default = tmp_path / "home" / ".config" / "ragtui" / "config.toml"
            default.parent.mkdir(parents=True)
            default.write_bytes(content)
            bad = default
        done = cli(tmp_path, *args, "config", "show")
        assert done.returncode == 2 and done.stdout == ""
        [line] = done.stderr.splitlines()
        assert line.startswith(f"ragtui: config error: {bad} ") and needle in line
