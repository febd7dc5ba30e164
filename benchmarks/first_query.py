"""The first search after opening a collection, the ways a user meets it: the TUI's first question and the MCP
server's first search (`ragtui query`'s is `benchmarks.query_cli`).

    python -m benchmarks.first_query --data-dir DIR --collection NAME [--runs 3] [--eval-data DIR]

Each run is a fresh interpreter over a collection keyword_scale or ingest_scale built, the query embedded over
HTTP by query_cli's stand-in Ollama (the builds' hashed vectors), every other setting the shipped default.

- TUI, typed at once: the app starts headless (200x50); as soon as its first screen is up, `/` and the question
  are typed (the pilot's keystrokes take seconds, `typing_s`, as a user's would) and enter pressed; timed from
  enter until the sources pane holds the found chunks, from both legs. The stores' loads the app starts at
  start-up may still be running then.
- TUI, typed later: the same, the question typed once the app's start-up "engine" worker (the engine's imports,
  then the stores' opening) has ended, as a user who reads the screen first meets it.
- MCP: `ragtui mcp` started by the official SDK's client over stdio; timed from the spawn to the client's
  connection, and from there to the first `search` tool call's result (called at once).

Prints a Markdown table and one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.keyword_scale import ROOT, collection_arguments, overrides_for, questions
from benchmarks.query_cli import stand_in_ollama

WAIT_S = 300           # a guard against a hang, not a timing


async def tui_first_question(data_dir: Path, name: str, question: str, ollama: str, later: bool) -> dict[str, Any]:
    from ragtui.config import load_settings
    from ragtui.tui.app import RagtuiApp
    from ragtui.tui.widgets.sources import SourcesPanel

    settings = load_settings(user_file=data_dir / "none.toml", env={}, overrides=overrides_for(data_dir, ollama=ollama))
    started = time.perf_counter()
    app = RagtuiApp(settings, cursor_blink=False)
    async with app.run_test(size=(200, 50)) as pilot:
        up = time.perf_counter() - started
        if later:          # the main screen's "engine" worker warms the engine up, then opens the stores
            deadline, seen = time.monotonic() + WAIT_S, False
            while time.monotonic() < deadline:
                engine = [w for w in app.workers if w.group == "engine"]
                seen = seen or bool(engine)
                if seen and not any(w.state.name in ("PENDING", "RUNNING") for w in engine):
                    break
                await asyncio.sleep(0.05)
        ready = time.perf_counter() - started
        panel = app.query_one(SourcesPanel)
        await pilot.press("slash", *question)
        asked = time.perf_counter()
        typing = asked - started - ready
        await pilot.press("enter")
        deadline = time.monotonic() + WAIT_S
        while not panel.counts()["all"] and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        found = time.perf_counter() - asked
        sources = panel.counts()["all"]
        legs = {leg for source in panel.sources.values() for leg in source.legs}
    if not sources or legs != {"vector", "keyword"}:
        raise RuntimeError(f"not an answer from both legs: {sources} sources, legs {sorted(legs)}")
    return {"first_screen_s": round(up, 3), "typed_at_s": round(ready, 3), "typing_s": round(typing, 3),
            "enter_to_sources_s": round(found, 3), "sources": sources}


async def mcp_first_search(data_dir: Path, name: str, question: str, ollama: str) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    argv = [a for s in overrides_for(data_dir, ollama=ollama) for a in ("--set", s)]
    params = StdioServerParameters(command=sys.executable, args=["-m", "ragtui", *argv, "mcp"], cwd=str(ROOT))
    started = time.perf_counter()
    async with Client(params) as client:
        connected = time.perf_counter() - started
        result = await client.call_tool("search", {"query": question, "collections": [name], "limit": 8})
        searched = time.perf_counter() - started - connected
    if result.is_error or not (result.structured_content or {}).get("results"):
        raise RuntimeError(f"the first search found nothing: {str(result.content)[:500]}")
    return {"connected_s": round(connected, 3), "search_s": round(searched, 3),
            "spawn_to_result_s": round(connected + searched, 3)}


def child(args: argparse.Namespace) -> int:
    kind, question, ollama = args.child
    if kind == "mcp":
        out = asyncio.run(mcp_first_search(args.data_dir, args.collection, question, ollama))
    else:
        out = asyncio.run(tui_first_question(args.data_dir, args.collection, question, ollama, kind == "tui-later"))
    print(json.dumps(out))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    collection_arguments(parser)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    fake = stand_in_ollama()
    runs: dict[str, list[dict[str, Any]]] = {"tui-at-once": [], "tui-later": [], "mcp": []}
    try:
        for question in questions(args.eval_data, args.runs):
            for kind, done in runs.items():
                proc = subprocess.run([sys.executable, "-m", "benchmarks.first_query", "--data-dir", str(args.data_dir),
                                       "--collection", args.collection, "--eval-data", str(args.eval_data),
                                       "--child", kind, question, fake.url],
                                      capture_output=True, text=True, cwd=ROOT, timeout=2 * WAIT_S)
                if proc.returncode != 0:
                    raise SystemExit(f"{kind} run failed:\n{proc.stderr[-3000:]}")
                done.append(json.loads(proc.stdout.splitlines()[-1]))
    finally:
        fake.stop()

    def median(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[kind])

    print("| first search | median s (runs) |\n|---|---|")
    print(f"| TUI, typed at once (typing took {median('tui-at-once', 'typing_s'):.2f} s): enter -> sources | "
          f"{median('tui-at-once', 'enter_to_sources_s'):.2f} |")
    print(f"| TUI, typed once start-up work ended (at {median('tui-later', 'typed_at_s'):.2f} s): enter -> sources | "
          f"{median('tui-later', 'enter_to_sources_s'):.2f} |")
    print(f"| MCP: spawn -> connected | {median('mcp', 'connected_s'):.2f} |")
    print(f"| MCP: connected -> first search's result | {median('mcp', 'search_s'):.2f} |")
    print(json.dumps(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
