"""`ragtui ask`: retrieve, annotate and stream a cited answer to stdout; `--follow-up` asks another turn of a
session, `--continue` extends a cut answer, `--resynthesize` answers again from the current Relevant set."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, TextIO

from ragtui.cli.arg_types import add_filter_argument, positive, record_id
from ragtui.config import Settings
from ragtui.errors import RagtuiError
from ragtui.model.conversation import SessionSource, Standing, StopReason
from ragtui.model.filters import SearchFilter, parse_filters
from ragtui.model_ids import short_name
from ragtui.numbers import NumberCheck
from ragtui.quotes import QuoteCheck
from ragtui.sanitize import clean, one_line

if TYPE_CHECKING:
    from ragtui.events import Event, SynthesisFinished
    from ragtui.history import HistoryStore
    from ragtui.model.conversation import Turn
    from ragtui.research.session import ResearchSession
    from ragtui.workspace import Workspace


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("ask", help="answer a question from your collections, with citations",
                            description="Retrieve sources, annotate each with the LLM, then stream a cited "
                                        "answer. Every run is saved to the history.")
    parser.add_argument("query", nargs="?", help="the question (not needed with --continue, --resynthesize or "
                                                 "--follow-up)")
    parser.add_argument("-c", "--collection", action="append", default=[], metavar="NAME",
                        help="collection to search (repeatable; default: all)")
    add_filter_argument(parser)
    parser.add_argument("--no-annotate", action="store_true", help="skip annotation: every source goes to synthesis")
    parser.add_argument("--json", action="store_true", help="print the finished session as one JSON object")
    parser.add_argument("--limit", type=positive, metavar="N",
                        help="print at most N sources (all of them are still used and saved)")
    parser.add_argument("--continue", dest="cont", action="store_true",
                        help="continue the last answer that was cut for length or cancelled while being written "
                             "(or --session ID)")
    parser.add_argument("--follow-up", metavar="QUESTION",
                        help="ask QUESTION as the next turn of the latest session (or --session ID), in the light "
                             "of its earlier questions and answers")
    parser.add_argument("--rewrite", metavar="TEXT",
                        help="with --follow-up: retrieve on TEXT instead of the LLM's standalone rewrite")
    parser.add_argument("--resynthesize", action="store_true",
                        help="answer the latest turn again from its current Relevant set (after rescue, drop or "
                             "reannotate; the latest session or --session ID)")
    parser.add_argument("--session", type=record_id, metavar="ID",
                        help="with --continue, --follow-up or --resynthesize: which session")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.library import validate_collection_name
    from ragtui.research.session import preflight
    from ragtui.workspace import Workspace

    for name in args.collection:            # a usage error (exit 2) before anything runs, as in every command
        validate_collection_name(name)
    search_filter = parse_filters(args.filter)
    if args.no_annotate:
        settings = settings.replace(annotation__enabled=False)
    preflight(settings, set_model="set [llm] model, or --set llm.model=NAME; `ollama list` shows what is pulled")
    with Workspace(settings) as workspace:
        return _ask(args, workspace, search_filter)


def _ask(args: argparse.Namespace, workspace: Workspace, search_filter: SearchFilter) -> int:
    chosen = [flag for flag, on in (("--continue", args.cont), ("--follow-up", args.follow_up is not None),
                                    ("--resynthesize", args.resynthesize)) if on]
    if len(chosen) > 1:
        raise RagtuiError(f"{' and '.join(chosen)} cannot be combined", exit_code=2)
    if args.rewrite is not None and args.follow_up is None:
        raise RagtuiError("--rewrite goes with --follow-up", exit_code=2)
    if (chosen and args.query) or (args.session is not None and not chosen):
        raise RagtuiError("give either a question or one of --continue, --follow-up, --resynthesize "
                          "(--session goes with those)", exit_code=2)
    if search_filter and (args.cont or args.resynthesize):
        raise RagtuiError("-f/--filter goes with a question or --follow-up (it narrows a search)", exit_code=2)
    if args.follow_up is not None or args.resynthesize:
        session = workspace.reopen(args.session or latest_session(workspace.history))
        events = session.synthesize() if args.resynthesize else \
            session.follow_up(args.follow_up, rewrite=args.rewrite, search_filter=search_filter or None)
    elif args.cont:
        session = workspace.reopen(args.session) if args.session else _last_continuable(workspace)
        if not session.turn.can_continue:
            raise RagtuiError(f"session {session.id}: {session.turn.continue_refusal} (stop reason: "
                              f"{session.turn.stop_reason or 'none'}; `ragtui ask --resynthesize --session "
                              f"{session.id}` answers afresh)")
        events = session.continue_answer()
    else:
        if not args.query or not args.query.strip():
            raise RagtuiError("ask needs a question (or --continue)", exit_code=2)
        collections = args.collection or workspace.collection_names()
        if not collections:
            raise RagtuiError("no collections to search: ingest a folder first with `ragtui ingest`")
        workspace.prepare_soon(collections)   # its loads overlap the engine's imports
        session = workspace.new_session(args.query.strip(), collections, search_filter=search_filter)
        events = session.run()
    printer = JsonPrinter() if args.json else TextPrinter(sys.stdout, sys.stderr, continuing=args.cont,
                                                          limit=args.limit)
    try:
        ok = asyncio.run(drive(session, events, printer))
    except KeyboardInterrupt:
        if session.id is None:
            print("\nragtui: interrupted; the session was not saved (the history file is damaged)", file=sys.stderr)
        else:
            goes_on = f"; `ragtui ask --continue --session {session.id}` goes on" if session.turn.can_continue else ""
            print(f"\nragtui: interrupted; session {session.id} kept with stop reason "
                  f"{session.turn.stop_reason.value or 'none'!r} (`ragtui history show {session.id}`){goes_on}",
                  file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(session_json(session), indent=2))
    return 0 if ok else 1


def latest_session(history: HistoryStore) -> int:
    """The id of the newest saved session (a RagtuiError when the history holds none)."""
    latest = history.list_sessions(limit=1)
    if not latest:
        raise RagtuiError("no session in the history yet: ask a question first")
    return latest[0].id


CONTINUE_LOOKS_BACK = 50     # sessions `ask --continue` without --session looks through, newest first


def _last_continuable(workspace: Workspace) -> ResearchSession:
    """The newest session whose answer `Turn.can_continue` (cut for length, or cancelled)."""
    partial = (StopReason.LENGTH, StopReason.CANCELLED)     # the summary's cheap filter before the rule itself
    for summary in workspace.history.list_sessions(limit=CONTINUE_LOOKS_BACK):
        if summary.stop_reason in partial:
            session = workspace.reopen(summary.id)
            if session.turn.can_continue:
                return session
    raise RagtuiError("no answer to continue: none of the latest sessions was cut for length or cancelled "
                      "while its answer was being written")


async def drive(session: ResearchSession, events: AsyncGenerator[Event, None],
                 printer: TextPrinter | JsonPrinter) -> bool:
    """Render every event; False when a stage failed. Ctrl-C cancels this task, and the session saves itself."""
    ok = True
    try:
        async for event in events:
            ok = printer.show(event, session) and ok
    finally:
        await events.aclose()
        await session.aclose()
    return ok


class TextPrinter:
    """Sources and annotations as they arrive, then the answer token by token."""

    def __init__(self, out: TextIO, err: TextIO, *, continuing: bool = False, limit: int | None = None) -> None:
        self.out, self.err = out, err
        self.continuing = continuing
        self.limit = limit          # sources printed (their annotations too); None: all
        self.printed: set[int] = set()
        self.not_saved = NotSavedWarning()
        self.no_quote: list[str] = []   # lines of relevant sources with no quote: printed after the others

    def show(self, event: Event, session: ResearchSession) -> bool:
        from ragtui import events as ev
        from ragtui.history import annotation_origin

        if not isinstance(event, ev.SourceChanged) and self.no_quote:
            for line in self.no_quote:
                self._line(line)
            self.no_quote = []
        if isinstance(event, ev.RewriteReady):
            self._line(one_line(f"Follow-up rewritten by {event.by}: {event.rewrite}"))
        elif isinstance(event, ev.SourcesReady):
            turn = f" (turn {event.turn})" if event.turn > 1 else ""
            self._line(one_line(f"{len(event.sources)} source(s) for {session.turn.query!r}{turn} in "
                                f"{', '.join(session.conversation.collections)}")
                       + (" (keyword leg only: no vector search was possible)" if event.keyword_only else "") + ":")
            self.printed = {s.number for s in event.sources[:self.limit]}
            for s in event.sources[:self.limit]:
                near = f"  neighbour of [{s.neighbor_of}]" if s.neighbor_of else ""
                self._line(f"  [{s.number}] {one_line(s.chunk.label)}  score {s.score:.3f}  "
                           f"{'+'.join(s.legs) or '-'}{near}")
            if self.limit is not None and len(event.sources) > self.limit:
                self._line(f"  ({len(event.sources) - self.limit} more not shown: --limit {self.limit})")
        elif isinstance(event, ev.AnnotationFinished | ev.AnnotationFailed) and not self._shown(event.number):
            pass
        elif isinstance(event, ev.AnnotationFinished):
            source = event.source
            no_quote = source.standing is Standing.NO_QUOTE
            mark = "relevant, no quote" if no_quote else "relevant" if event.relevant else "filtered"
            line = (f"  [{event.number}] {mark} ({one_line(annotation_origin(source, short=True))}): "
                    f"{_misquote_note(source)}{_clip(clean(event.text))}")
            if no_quote:
                self.no_quote.append(line)
            else:
                self._line(line)
        elif isinstance(event, ev.AnnotationFailed):
            self._line(f"  [{event.number}] annotation failed: {one_line(event.error)}")
        elif isinstance(event, ev.Notice):
            print(f"ragtui: {event.level}: {one_line(event.message)}", file=self.err, flush=True)
        elif isinstance(event, ev.SynthesisStarted):
            if event.continuation:
                self.out.write(clean(session.answer))
            else:
                self._line(f"\nAnswer ({one_line(short_name(event.model))}, "
                           f"from {len(event.numbers)} source(s): {_refs(event.numbers)}"
                           + (f"; the most relevant part of {_refs(event.windowed)}" if event.windowed else "")
                           + (f"; did not fit: {_refs(event.left_out)}" if event.left_out else "") + "):\n")
            self.out.flush()
        elif isinstance(event, ev.SynthesisToken):
            self.out.write(clean(event.text))     # no ESC gets through, so no sequence spans two tokens
            self.out.flush()
        elif isinstance(event, ev.SynthesisFinished):
            self._finished(event)
        elif isinstance(event, ev.StageFailed):
            print(f"ragtui: {event.stage} failed: {one_line(event.message)}", file=self.err, flush=True)
            return False
        elif isinstance(event, ev.SessionSaved):
            if event.not_saved:
                self.not_saved(event.not_saved, self.err)
            else:
                times = ", ".join(f"{k.removesuffix('_s')} {v:.1f} s" for k, v in event.timings.items())
                print(f"ragtui: session {event.session_id} saved ({times})", file=self.err, flush=True)
        return True

    def _shown(self, number: int) -> bool:
        return self.limit is None or number in self.printed

    def _finished(self, event: SynthesisFinished) -> None:
        self._line("")
        if event.citations:
            self._line("\nCited: " + " ".join(f"[{n}]" for n in event.citations))
        if event.unknown_citations:
            print("ragtui: warning: cited but not among the sources given to the model: "
                  + " ".join(f"[{n}]" for n in event.unknown_citations), file=self.err, flush=True)
        for check in event.unverified:
            print(f"ragtui: warning: {unverified_line(check)}", file=self.err, flush=True)
        for number in event.numbers:
            print(f"ragtui: warning: {number_line(number)}", file=self.err, flush=True)
        if event.echo:
            print(f"ragtui: warning: {ECHO_LINE}", file=self.err, flush=True)
        if event.non_answer:
            print(f"ragtui: warning: {NON_ANSWER_LINE}", file=self.err, flush=True)
        if event.uncited:
            print(f"ragtui: warning: {UNCITED_LINE}", file=self.err, flush=True)
        if event.stop_reason is StopReason.LENGTH:
            print("ragtui: the answer was cut at llm.max_tokens; `ragtui ask --continue` goes on",
                  file=self.err, flush=True)

    def _line(self, text: str) -> None:
        print(text, file=self.out, flush=True)


class JsonPrinter:
    """Quiet while running (stage failures and an unsaved session still go to stderr); the caller prints the
    session at the end."""

    def __init__(self) -> None:
        self.not_saved = NotSavedWarning()

    def show(self, event: Event, session: ResearchSession) -> bool:
        from ragtui import events as ev

        if isinstance(event, ev.StageFailed):
            print(f"ragtui: {event.stage} failed: {one_line(event.message)}", file=sys.stderr, flush=True)
            return False
        if isinstance(event, ev.SessionSaved) and event.not_saved:
            self.not_saved(event.not_saved, sys.stderr)
        return True


UNCITED_LINE = "the answer cites no source [N]: nothing in it is tied to a source; check it against the sources"
ECHO_LINE = ("the answer is mostly text copied from the prompt (source headers, source text, the question): it "
             "answers nothing, and a [N] inside the copy is not a citation")
NON_ANSWER_LINE = ("the answer only names sources ([N]) and says nothing they say: it is not an answer; read the "
                   "sources, or ask again")
def unverified_line(check: QuoteCheck) -> str:
    """One line saying that an answer's quote is not in the source it cites: misattributed (another source holds
    it) or not found (`QuoteCheck.verdict`)."""
    return one_line(f"the answer's quote {_clip(check.quote, 80)!r} is {check.verdict}")


def number_line(check: NumberCheck) -> str:
    """One line saying that a number an answer's sentence states is not in the sources it cites, beside the
    sentence (`NumberCheck.verdict`: the near figure the source has, when it has one)."""
    return one_line(f"a number not in the source cited: {check.verdict} (in {_clip(check.sentence, 100)!r})")


def _misquote_note(source: SessionSource) -> str:
    return "(quote not found in this source) " if source.misquoted else ""


class NotSavedWarning:
    """The damaged-history line, printed once however many stages report it."""

    def __init__(self) -> None:
        self.said = False

    def __call__(self, why: str, err: TextIO) -> None:
        if not self.said:
            self.said = True
            print(f"ragtui: warning: this session is not saved: {one_line(why)}", file=err, flush=True)


def _refs(numbers: tuple[int, ...]) -> str:
    return " ".join(f"[{n}]" for n in numbers)


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def session_json(session: ResearchSession) -> dict[str, Any]:
    """The latest turn at the top level (as before turns existed), and every turn under "turns"."""
    turns = [_turn_json(session, i, t) for i, t in enumerate(session.turns, start=1)]
    return {"session": session.id, "collections": session.conversation.collections, **turns[-1], "turns": turns}


def _turn_json(session: ResearchSession, index: int, turn: Turn) -> dict[str, Any]:
    """One turn; "in_answer", "used", "used_window" and "did_not_fit" describe the prompt built in this run;
    "quotes" checks each quote the answer attributes, "numbers" lists the numbers it states that its cited sources
    do not hold, "misquoted" what an annotation quotes that its chunk lacks."""
    quotes = session.quote_checks(turn)
    return {
        "turn": index, "query": turn.query, "rewrite": turn.rewrite, "rewrite_by": turn.rewrite_by,
        "sources": [{**s.to_json(), "in_answer": session.use_in_answer(s.number)} for s in turn.sources],
        "used": [n for n in turn.prompt_numbers if session.use_in_answer(n) == "whole"],
        "used_window": [n for n in turn.prompt_numbers if session.use_in_answer(n) == "window"],
        "did_not_fit": [s.number for s in turn.sources if session.use_in_answer(s.number) == "did not fit"],
        "answer": turn.answer, "stop_reason": turn.stop_reason.value, "continuations": turn.continuations,
        "citations": turn.citations, "unknown_citations": turn.unknown_citations,
        "warnings": list(turn.failed_checks),
        "quotes": [check.to_json() for check in quotes],
        "numbers": [check.to_json() for check in session.number_checks(turn)],
        "unverified_citations": sorted({n for check in quotes if not check.verified for n in check.cited}),
        "context_turns": turn.context_turns,
        "retrieval_meta": turn.retrieval_meta.to_json() if turn.retrieval_meta else {},
        "rewrite_meta": turn.rewrite_meta.to_json() if turn.rewrite_meta else {}, "timings": dict(turn.timings),
    }
