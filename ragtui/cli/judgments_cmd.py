"""Your judgments as a test set: `ragtui eval --from-history [COLLECTION ...]` and `ragtui history judgments`.

The judgments are what the saved sessions' sources went through (ragtui.evaluation.judgments:
rescued and cited relevant, dropped not; the annotator's kept and filtered ones weak labels,
counted with `--weak`). `history judgments` counts them and `--export FILE` writes them as BEIR
qrels with their queries; `eval --from-history` scores retrieval modes against them on the
collections themselves, with the same metrics, CIs and comparisons as `ragtui eval`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtui.config import Settings
from ragtui.errors import RagtuiError
from ragtui.sanitize import one_line

if TYPE_CHECKING:
    from ragtui.evaluation.runner import EvalReport
    from ragtui.workspace import Workspace

WEAK_HELP = "also count the weak labels: sources the annotator kept that the answer did not cite (grade 1) and " \
            "sources it filtered that you did not rescue (grade 0), verdicts you may never have looked at"

# How `history judgments` words each kind (ragtui.evaluation.judgments.Kind).
KIND_WORDS = {"rescued": "relevant (2): you rescued it", "cited": "relevant (2): the answer cited it, you kept it",
              "dropped": "not relevant (0): you dropped it",
              "kept": "weak, relevant (1): the annotator kept it, the answer did not cite it",
              "filtered": "weak, not relevant (0): the annotator filtered it, you did not rescue it"}


def add_history_arguments(parser: argparse.ArgumentParser) -> None:
    """`eval`'s `--from-history` and `--weak`."""
    parser.add_argument("--from-history", nargs="*", metavar="COLLECTION",
                        help="no dataset: score the modes against your judgments in the saved sessions (rescued "
                             "and cited sources relevant, dropped not), searching your collections read-only; "
                             "with names, only the sessions and chunks of those collections")
    parser.add_argument("--weak", action="store_true", help=WEAK_HELP)


def history_eval(args: argparse.Namespace, settings: Settings,
                 progress: Callable[[str], None]) -> Coroutine[Any, Any, EvalReport]:
    """The `eval --from-history` run the eval command awaits (usage errors raised at once)."""
    from ragtui.evaluation.history_eval import run_history_eval

    if args.dataset is not None or args.keep_index:
        raise RagtuiError("--from-history evaluates on your collections: it takes no --dataset or --keep-index",
                          exit_code=2)
    return run_history_eval(settings, args.from_history, args.modes, weak=args.weak, limit=args.limit,
                            sources=args.sources, progress=progress, concurrency=args.concurrency,
                            compare_pairs=[tuple(args.compare)] if args.compare else [])


def add_history_action(actions: argparse._SubParsersAction) -> None:
    """`history judgments [COLLECTION ...] [--export FILE] [--weak]`."""
    parser = actions.add_parser("judgments", help="count the relevance judgments in your sessions; --export "
                                                  "writes them as BEIR qrels")
    parser.add_argument("collections", nargs="*", metavar="COLLECTION",
                        help="only the sessions and chunks of these collections (default: all)")
    parser.add_argument("--export", type=Path, metavar="FILE",
                        help="write the judgments as BEIR qrels (query-id, corpus-id, score) to FILE and their "
                             "queries to FILE's name with .queries.jsonl")
    parser.add_argument("--weak", action="store_true", help=WEAK_HELP)


def list_judgments(args: argparse.Namespace, workspace: Workspace) -> int:
    from ragtui.evaluation.judgments import Kind, collect, conversations, missing, write_beir

    judgments = collect(conversations(workspace.history, args.collections), args.collections)
    where = f" that searched {', '.join(args.collections)}" if args.collections else ""
    if not judgments.sessions:
        print(f"No saved session{where}.")
        return 0
    counts = judgments.counts()
    print(f"{len(judgments.judgments)} judgments of {len(judgments.queries)} questions in {judgments.sessions} "
          f"sessions{where}:")
    for kind in Kind:
        print(f"  {kind.value:<9}{counts.get(kind, 0):>6}  {KIND_WORDS[kind.value]}")
    print(f"  {'(none)':<9}{judgments.unjudged:>6}  sources that judge nothing (failed or no annotation, not cited)")
    if not args.weak and any(counts.get(kind, 0) for kind in (Kind.KEPT, Kind.FILTERED)):
        print("The weak labels count only with --weak (in `eval --from-history` and in the export).")
    gone = missing(workspace, judgments.judgments)
    if gone:
        print(f"{len(gone)} judged chunks are no longer in their collection (`eval --from-history` leaves them "
              "out; the export keeps them):")
        for j in judgments.judgments:
            if j.doc_id in gone:
                print(one_line(f"  session {j.session} [{j.number}] {j.label} ({j.kind.value}): {gone[j.doc_id]}"))
    if args.export is not None:
        try:
            queries, rows, count = write_beir(judgments, args.weak, args.export)
        except (OSError, ValueError) as exc:    # a folder, no permission, a name no file can have
            raise RagtuiError(f"cannot write {args.export}: {getattr(exc, 'strerror', None) or exc}",
                              exit_code=2) from None
        print(f"wrote {rows} judgments of {count} questions to {args.export}, the questions to {queries}")
    return 0
