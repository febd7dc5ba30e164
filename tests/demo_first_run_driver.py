"""Runs `ragtui demo` in a fresh interpreter the way `make demo` starts it (`python -m ragtui demo`: the CLI,
the demo's settings and first-run check, `run_app`, the app with its start-up probe, warm-up and first-run
ingest all running at once), with Textual headless and a pilot standing in for the user: it waits for the
first-run ingest to end, closes the ingest screen, asks a question and waits for the answer. Nothing
imports a heavy library before the CLI runs, as in a fresh `ragtui demo`.

    python -m tests.demo_first_run_driver REPORT.json [ragtui arguments before `demo`...]

Exits with the CLI's exit code; REPORT.json holds what the pilot saw (see `report`), written whatever
happens (an app that died on an error leaves the fields it had not reached empty).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from textual.app import App
from textual.pilot import Pilot

from tests import import_audit

QUESTION = "What does natural selection act on?"
DEADLINE_S = 600          # a guard against a hang, far above any run on a loaded machine (not a timing check)

report: dict[str, Any] = {"ingest": "", "ingest_hint": "", "answer": "", "states_seen": [], "error": "",
                          "bypasses": []}


async def until(condition: Any, pilot: Pilot) -> None:
    async with asyncio.timeout(DEADLINE_S):
        while not condition():
            await pilot.pause(0.05)


async def drive(pilot: Pilot) -> None:
    from ragtui.tui.screens.ingest import IngestScreen
    from ragtui.tui.screens.main import MainScreen

    app = pilot.app
    try:
        if next(s for s in app.screen_stack if isinstance(s, MainScreen)).ingest_on_start is None:
            raise RuntimeError("the demo did not ingest on start")
        await until(lambda: isinstance(app.screen, IngestScreen), pilot)
        screen = app.screen
        assert isinstance(screen, IngestScreen)

        def hint() -> str:
            return "".join(str(node.render()) for node in screen.query("#ingest-hint"))

        await until(lambda: screen.changed or "failed" in hint(), pilot)
        report["ingest_hint"] = hint()
        main = next(s for s in app.screen_stack if isinstance(s, MainScreen))
        # the collections pane reloads once the ingest has ended
        await until(lambda: [v.state for v in main.collection_views if v.state != "ingesting"], pilot)
        report["ingest"] = main.collection_views[0].state
        await pilot.press("escape")
        await until(lambda: app.screen is main, pilot)
        await pilot.press("escape", "slash", *QUESTION, "enter")
        view = main.research

        def answered() -> bool:
            word = str(view.status.state) if view.status is not None else ""
            if word not in report["states_seen"][-1:]:
                report["states_seen"].append(word)
            return view.session is not None and not view.busy

        await until(answered, pilot)
        report["answer"] = view.session.answer if view.session is not None else ""
    except BaseException as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        app.exit()


def main() -> int:
    out = Path(sys.argv[1])
    audit = import_audit.install()
    original_run = App.run

    def headless_run(self: App, *args: Any, **kwargs: Any) -> Any:
        return original_run(self, *args, headless=True, size=(100, 30), auto_pilot=drive, **kwargs)

    App.run = headless_run  # type: ignore[method-assign]
    from ragtui.cli import main as cli

    try:
        return cli([*sys.argv[2:], "demo"])
    finally:
        report["bypasses"] = audit.bypasses
        out.write_text(json.dumps(report), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
