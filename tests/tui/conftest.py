from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragtui.collections import CollectionInfo
from ragtui.config import Settings, load_settings
from ragtui.events import Event
from ragtui.tui.app import RagtuiApp
from ragtui.tui.messages import OllamaProbed

FIXED_HOST = "http://127.0.0.1:11434"   # shown in snapshots; never contacted (the probe is off in those tests)
COLLECTIONS = [CollectionInfo("demo", "Darwin and notes", "", (), 42, "ready"),
               CollectionInfo("papers", "genetics", "", (), 7, "ready"),
               CollectionInfo("drafts", "", "", (), 0, "empty")]


@pytest.fixture
def snapshot_settings(tmp_path: Path) -> Callable[..., Settings]:
    """Settings for snapshots: a fixed host (nothing in the picture depends on a port or a temp path)."""

    def build(*overrides: str) -> Settings:
        base = [f"storage.data_dir={tmp_path / 'data'}", f"ollama.host={FIXED_HOST}", "llm.model=chat",
                "synonyms.enabled=false"]
        return load_settings(user_file=tmp_path / "none.toml", env={}, overrides=[*base, *overrides])

    return build


def quiet_app(settings: Settings, **kwargs) -> RagtuiApp:
    """The app without its start-up probes; tests set Ollama's state and the collections themselves."""
    return RagtuiApp(settings, cursor_blink=False, start_workers=False, **kwargs)


async def feed(app: RagtuiApp, events: list[Event], *, ollama_up: bool = True) -> None:
    """Put the app in the state those engine events describe."""
    if ollama_up:
        app.post_message(OllamaProbed(FIXED_HOST, "0.12.6", ("chat:latest", "nomic-embed-text:latest")))
    app.show_collections(COLLECTIONS)
    for event in events:
        await app.render_event(event)
