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
import faulthandler
import json
import sys
import time
from pathlib import Path
from typing import Any

from textual.app import App
from textual.pilot import Pilot

from tests import import_audit

QUESTION = "What does natural selection act on?"
# A guard against a hang for the whole run, far above any run on a loaded machine (not a timing check), and
# below the test's own limit on the process, so that a hung run still writes its report: where it waited
# ("stage") and what the screen showed then ("seen").
DEADLINE_S = 840
DEADLINE = time.monotonic() + DEADLINE_S

report: dict[str, Any] = {"ingest": "", "ingest_hint": "", "answer": "", "states_seen": [], "error": "",
                          "bypasses": [], "stage": "", "seen": {}}


class AppStopped(Exception):
    """The app stopped (an unhandled error in it, or it quit) while the pilot waited for something on screen."""


async def until(stage: str, condition: Any, pilot: Pilot) -> None:
    """Wait for `condition`; an app that stopped meanwhile ends the wait at once, with its error (Textual keeps
    running this pilot after the app stopped, so without this a crash read as a hang until the deadline)."""
    report["stage"] = stage
    async with asyncio.timeout(max(DEADLINE - time.monotonic(), 0)):
        while not condition():
            if pilot.app.return_code is not None:
                error = getattr(pilot.app, "_exception", None)   # Textual keeps it only privately
                raise AppStopped(f"exit code {pilot.app.return_code}"
                                 + (f": {type(error).__name__}: {error}" if error is not None else ""))
            await pilot.pause(0.05)


def seen(app: App) -> dict[str, Any]:
    """What the screen shows, for the report of a run that did not finish."""
    from ragtui.tui.screens.main import MainScreen

    try:
        main = next((s for s in app.screen_stack if isinstance(s, MainScreen)), None)
        if main is None:
            return {"screen": type(app.screen).__name__}
        status = main.status
        return {"screen": type(app.screen).__name__,
                "collections": [(v.name, v.state, v.chunks) for v in main.collection_views],
                "collections_note": str(main.query_one("#collections-note").render()),
                "state_word": str(status.state) if status is not None else "", "busy": main.research.busy,
                "workers": [f"{w.name}:{w.state.name}" for w in app.workers]}
    except Exception as exc:     # the app is half torn down: say so rather than hide the run's own error
        return {"unreadable": f"{type(exc).__name__}: {exc}"}


async def drive(pilot: Pilot) -> None:
    from ragtui.tui.screens.ingest import IngestScreen
    from ragtui.tui.screens.main import MainScreen

    app = pilot.app
    try:
        if next(s for s in app.screen_stack if isinstance(s, MainScreen)).ingest_on_start is None:
            raise RuntimeError("the demo did not ingest on start")
        await until("the ingest screen", lambda: isinstance(app.screen, IngestScreen), pilot)
        screen = app.screen
        assert isinstance(screen, IngestScreen)

        def hint() -> str:
            return "".join(str(node.render()) for node in screen.query("#ingest-hint"))

        main = next(s for s in app.screen_stack if isinstance(s, MainScreen))
        # The collections pane reloads once the ingest has ended. Only a load shown after the ingest finished
        # tells its outcome: the views loaded at start show a cut first run's collection as "interrupted".
        after_end: list[str] = []
        show = main.show_collections

        def shown_after_end(views: list[Any]) -> None:
            show(views)
            if screen.changed:
                after_end.extend(v.state for v in views if v.state != "ingesting")

        main.show_collections = shown_after_end     # type: ignore[method-assign]
        await until("the ingest's end", lambda: screen.changed or "failed" in hint(), pilot)
        report["ingest_hint"] = hint()
        await until("the collections pane's reload", lambda: after_end or "failed" in hint(), pilot)
        report["ingest"] = main.collection_views[0].state
        await pilot.press("escape")
        await until("the research view", lambda: app.screen is main, pilot)
        await pilot.press("escape", "slash", *QUESTION, "enter")
        view = main.research

        def answered() -> bool:
            word = str(main.status.state)
            if word not in report["states_seen"][-1:]:
                report["states_seen"].append(word)
            return view.session is not None and not view.busy

        await until("the answer", answered, pilot)
        report["answer"] = view.session.answer if view.session is not None else ""
    except BaseException as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["seen"] = seen(app)
        raise
    finally:
        app.exit()


def main() -> int:
    out = Path(sys.argv[1])
    faulthandler.dump_traceback_later(DEADLINE_S + 20)     # a blocked event loop: every thread's stack, on stderr
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
