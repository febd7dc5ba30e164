from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widget import Widget

from ragtui.config import Settings, load_settings
from ragtui.events import Event
from ragtui.model.collection import CollectionInfo
from ragtui.tui.app import RagtuiApp
from ragtui.tui.messages import Research
from ragtui.tui.screens.main import MainScreen

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


def main_screen(app: RagtuiApp) -> MainScreen:
    """The research view, under whatever dialog is open."""
    return next(s for s in app.screen_stack if isinstance(s, MainScreen))


async def handled(node: Widget) -> None:
    """Wait until the screen or widget has handled every message posted to it so far (they are handled in order)."""
    done = asyncio.Event()
    node.call_later(done.set)
    await asyncio.wait_for(done.wait(), 30)


async def post_events(app: RagtuiApp, events: list[Event]) -> None:
    """Post engine events to the research view as a research worker does, and wait until they are shown."""
    view = main_screen(app).research
    for event in events:
        view.post_message(Research.EngineEvent(event))
    await handled(view)


def probed(settings: Settings, models: tuple[str, ...] = (), error: str = "",
           served: tuple[str, ...] = ()) -> Research.ServersProbed:
    """What the start-up probe posts when Ollama lists `models` and an OpenAI-compatible server lists `served`
    (or, with `error`, every server is down), without asking them: the snapshot tests' servers are never
    contacted."""
    from dataclasses import replace

    from ragtui.llm.servers import configured_servers, listing

    return Research.ServersProbed(tuple(
        replace(s, error=error) if error else listing(settings, s, models if s.kind == "ollama" else served)
        for s in configured_servers(settings)))


async def feed(app: RagtuiApp, events: list[Event], *, ollama_up: bool = True) -> None:
    """Put the app in the state those engine events describe."""
    screen = main_screen(app)
    if ollama_up:
        screen.research.post_message(probed(app.settings, ("chat:latest", "nomic-embed-text:latest")))
    screen.show_collections(COLLECTIONS)
    await post_events(app, events)
