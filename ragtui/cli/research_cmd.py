"""`ragtui research`: a research run (research/deep.py): a plan of sub-questions, evidence gathered and checked
for each over rounds of searches, and one cited report; printed as it goes, or as one JSON object."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, TextIO

from ragtui.cli.arg_types import add_filter_argument
from ragtui.config import Settings
from ragtui.errors import RagtuiError
from ragtui.model.filters import parse_filters
from ragtui.sanitize import one_line

if TYPE_CHECKING:
    from ragtui.cli.ask_cmd import JsonPrinter, TextPrinter
    from ragtui.events import Event
    from ragtui.research.deep import ResearchRunner
    from ragtui.research.session import ResearchSession


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("research", help="a research run: sub-questions, evidence for each, one cited report",
                            description="The chat model splits the question into sub-questions; each is searched "
                                        "and its sources annotated; the model is asked which still lack evidence "
                                        "and those are searched again (at most --max-rounds more rounds); then one "
                                        "report cites the kept sources. Bounded by [research] max_model_calls, "
                                        "max_tokens and max_seconds. Saved to the history as one session.")
    parser.add_argument("query", help="the question")
    parser.add_argument("-c", "--collection", action="append", default=[], metavar="NAME",
                        help="collection to search (repeatable; default: all)")
    add_filter_argument(parser)
    parser.add_argument("--no-annotate", action="store_true",
                        help="skip annotation: every source found is kept")
    parser.add_argument("--max-rounds", type=_rounds, metavar="N",
                        help="gap rounds after the first (0-10; default research.max_rounds)")
    parser.add_argument("--json", action="store_true", help="print the finished run as one JSON object")
    parser.set_defaults(run=run)


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= value <= 10:
        raise argparse.ArgumentTypeError(f"{value} is not within 0-10")
    return value


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.library import validate_collection_name
    from ragtui.research.session import preflight
    from ragtui.workspace import Workspace

    for name in args.collection:
        validate_collection_name(name)
    search_filter = parse_filters(args.filter)
    question = " ".join(args.query.split())
    if not question:
        raise RagtuiError("research needs a question", exit_code=2)
    if args.no_annotate:
        settings = settings.replace(annotation__enabled=False)
    preflight(settings, set_model="set [llm] model, or --set llm.model=NAME; `ollama list` shows what is pulled")
    with Workspace(settings) as workspace:
        collections = args.collection or workspace.collection_names()
        if not collections:
            raise RagtuiError("no collections to search: ingest a folder first with `ragtui ingest`")
        workspace.prepare_soon(collections)
        runner = workspace.research(question, collections, search_filter=search_filter, max_rounds=args.max_rounds)
        printer = ResearchPrinter(sys.stdout, sys.stderr, quiet=args.json)
        try:
            ok = asyncio.run(_drive(runner, printer))
        except KeyboardInterrupt:
            session = runner.session
            kept = f"session {session.id} kept with what was gathered (`ragtui history show {session.id}`)" \
                if session.id is not None else "the run was not saved"
            print(f"\nragtui: interrupted; {kept}", file=sys.stderr)
            return 130
        if args.json:
            from ragtui.research.run_json import run_json

            print(json.dumps({**run_json(runner.session), "notices": printer.notices}, indent=2))
        return 0 if ok else 1


async def _drive(runner: ResearchRunner, printer: ResearchPrinter) -> bool:
    ok = True
    events = runner.run()
    try:
        async for event in events:
            ok = printer.show(event, runner.session) and ok
    finally:
        await events.aclose()
        await runner.session.aclose()
    return ok


class ResearchPrinter:
    """The plan, each search's sources and annotations (as `ask` prints them), each sub-question when done, each
    limit once, the report, then the cost; with `quiet` (--json) only failures and an unsaved session."""

    def __init__(self, out: TextIO, err: TextIO, *, quiet: bool) -> None:
        from ragtui.cli.ask_cmd import JsonPrinter, TextPrinter

        self.out, self.err = out, err
        self.quiet = quiet
        self.inner: TextPrinter | JsonPrinter = JsonPrinter() if quiet else TextPrinter(out, err)
        self.notices: list[str] = []      # every notice of the run, for --json

    def show(self, event: Event, session: ResearchSession) -> bool:
        from ragtui import events as ev
        from ragtui.model.research_run import SubState

        if isinstance(event, ev.SessionSaved):
            if event.not_saved:
                self.inner.not_saved(event.not_saved, self.err)
            return True
        if isinstance(event, ev.Notice):
            self.notices.append(one_line(event.message))
        if isinstance(event, ev.LimitReached):
            print(f"ragtui: warning: {one_line(event.message)}", file=self.err, flush=True)
            return True
        ok = self.inner.show(event, session)
        if self.quiet:
            return ok
        if isinstance(event, ev.PlanReady):
            self._line(f"Plan ({one_line(event.by)}):")
            for i, sub in enumerate(event.plan, start=1):
                self._line(f"  {i}. {one_line(sub.text)}")
        elif isinstance(event, ev.RoundStarted) and event.round > 1:
            self._line(f"\nRound {event.round}: " + "; ".join(
                f"{i + 1}. {one_line(q)}" for i, q in zip(event.parts, event.queries, strict=True)))
        elif isinstance(event, ev.SubQuestionChanged) and event.sub.state in (SubState.DONE, SubState.CANCELLED,
                                                                               SubState.SKIPPED, SubState.CUT):
            self._line(f"  sub-question {event.index + 1}: {event.sub.state.value}, {event.sub.kept} source(s) kept")
        elif isinstance(event, ev.ResearchFinished):
            cost = event.run.cost
            print(f"ragtui: research run: {len(event.run.plan)} sub-question(s), {event.run.rounds} round(s), "
                  f"{cost.model_calls} model calls, {cost.tokens} tokens, {cost.seconds:.1f} s; session "
                  f"{session.id if session.id is not None else '(not saved)'}", file=self.err, flush=True)
        return ok

    def _line(self, text: str) -> None:
        print(text, file=self.out, flush=True)
