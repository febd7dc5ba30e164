from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ragtui.config import Settings, load_settings
from tests.fake_ollama import FakeOllama
from tests.mini_wordnet import LEXICON, write_lmf


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or writes the real ~/.config or ~/.local/share, or sees RAGTUI_* from the shell."""
    home = tmp_path / "home"
    for var, sub in (("HOME", ""), ("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                     ("XDG_CACHE_HOME", ".cache")):
        monkeypatch.setenv(var, str(home / sub))
    import os

    for name in list(os.environ):
        if name.startswith("RAGTUI_"):
            monkeypatch.delenv(name)
    return home


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    server = FakeOllama().start()
    yield server
    server.stop()


@pytest.fixture
def make_settings(tmp_path: Path, fake_ollama: FakeOllama) -> Callable[..., Settings]:
    """Settings pointing at the fake server and a temp data dir; extra `section.key=value` overrides."""

    def build(*overrides: str, **kw: Any) -> Settings:
        base = [
            f"storage.data_dir={tmp_path / 'data'}",
            f"ollama.host={fake_ollama.url}",
            "llm.model=chat",
            "embed.model=nomic-embed-text",
            "synonyms.enabled=false",
        ]
        return load_settings(user_file=tmp_path / "no-user-config.toml", env={}, overrides=[*base, *overrides])

    return build


@pytest.fixture(scope="session")
def mini_wordnet_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_lmf(tmp_path_factory.mktemp("wn") / "mini-wn.xml")


@pytest.fixture
def wordnet_settings(make_settings: Callable[..., Settings], mini_wordnet_file: Path) -> Settings:
    """Settings with the mini lexicon installed in the data dir and expansion on."""
    from ragtui.retrieve.wordnet import install

    settings = make_settings("synonyms.enabled=true", f"synonyms.lexicon={LEXICON}")
    install(LEXICON, settings.data_dir, mini_wordnet_file)
    return settings


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--stress", type=int, default=0, metavar="N",
                     help="stress mode: run the first-run demo test N times, each under a CPU burner (one busy "
                          "process per core)")
