from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from ragtui.config import Settings, load_settings
from tests.chroma_server import ChromaServer, chroma_executable
from tests.cli_run import close_zygotes
from tests.fake_ollama import FakeOllama
from tests.mini_wordnet import LEXICON, write_lmf

REAL_TIER = Path(__file__).parent / "real"

# Hypothesis fails an example that runs over 200 ms by default: on a shared 2-core machine under load that measures
# the scheduler, not the code (a property test of the quote matcher went over it once at load 17). The properties
# stay; speed is the benchmarks' business.
hypothesis_settings.register_profile("ragtui", deadline=None)
hypothesis_settings.load_profile("ragtui")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--real", action="store_true",
                     help="also run the real-model tier, tests/real (`make test-real`; `make real-model` sets it up)")
    parser.addoption("--stress", type=int, default=0, metavar="N",
                     help="stress mode: run the first-run demo test N times, each under a CPU burner (one busy "
                          "process per core)")


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The real-model tier takes minutes of a real model's time: it runs only when asked for with --real. The
    tests of the session's Chroma server run on one pytest-xdist worker (`make test` runs them with
    --dist loadgroup), which starts that server once."""
    for item in items:
        if "chroma_server_process" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("chroma-server"))
    real = [item for item in items if item.path.is_relative_to(REAL_TIER)]
    for item in real:
        item.add_marker("real")
    if real and not config.getoption("--real"):
        config.hook.pytest_deselected(items=real)
        items[:] = [item for item in items if not item.path.is_relative_to(REAL_TIER)]


def pytest_sessionfinish(session: pytest.Session) -> None:
    close_zygotes()


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


@pytest.fixture(scope="session")
def chroma_server_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """One real `chroma run` on loopback for the whole session (see tests/chroma_server.py)."""
    exe = chroma_executable()
    if exe is None:
        pytest.skip("the chroma CLI (shipped with the chromadb package) is not installed")
    server = ChromaServer(exe, tmp_path_factory.mktemp("chroma-server"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def chroma_server(chroma_server_process: ChromaServer) -> ChromaServer:
    """The session's Chroma server, running (started again if an earlier test stopped it)."""
    chroma_server_process.start()
    return chroma_server_process
