"""`ragtui verify FILE [--against PATH] [--collections] [--json]`: a session bundle (`ragtui history bundle`)
verified offline from what it holds, and optionally against the documents as they are now: files (`--against`) or
this data dir's collections (`--collections`: each citation current, moved, changed or gone, as `history verify`
checks a saved session). Exit 0 when everything holds, 1 with one line per failure, 2 when the file is not a
bundle this ragtui reads."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ragtui.config import Settings
from ragtui.paths import user_path
from ragtui.sanitize import one_line

if TYPE_CHECKING:
    from ragtui.bundle.against import DocumentCheck
    from ragtui.bundle.verify import Failure
    from ragtui.model.citation_check import CitationCheck


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("verify", help="verify a session bundle (`history bundle`) offline: its hashes and "
                                           "every check, recomputed from its texts")
    parser.add_argument("file", type=user_path, metavar="FILE", help="the bundle")
    parser.add_argument("--against", type=user_path, metavar="PATH",
                        help="the documents as they are now, a folder or one file: each cited document's sha256 "
                             "and whether each cited passage is still in it")
    parser.add_argument("--collections", action="store_true",
                        help="also check each citation against this data dir's collections as they are now: "
                             "current, moved (a note), changed or gone (failures)")
    parser.add_argument("--json", action="store_true", help="the result as one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ragtui.bundle.read import load
    from ragtui.bundle.verify import verify

    data = load(args.file)
    failures = verify(data)
    documents: list[DocumentCheck] = []
    if args.against is not None:
        from ragtui.bundle.against import against
        from ragtui.errors import RagtuiError

        try:
            there = args.against.is_dir() or args.against.is_file()
        except (OSError, ValueError) as exc:    # a name too long, a NUL byte
            raise RagtuiError(f"--against {args.against}: {getattr(exc, 'strerror', None) or exc}",
                              exit_code=2) from None
        if not there:
            raise RagtuiError(f"--against {args.against}: no such file or folder", exit_code=2)
        documents, more = against(data, args.against, settings)
        failures += more
    citations = _in_collections(data, settings) if args.collections else []
    failures += [_citation_failure(data["content"], c) for c in citations if c.state in ("changed", "gone")]
    content = data["content"]
    if args.json:
        print(json.dumps({"file": str(args.file), "session": content["session"]["id"], "ok": not failures,
                          "failures": [f.to_json() for f in failures],
                          "documents": [d.to_json() for d in documents],
                          "citations": [c.to_json() for c in citations]}, indent=2, ensure_ascii=True))
        return 1 if failures else 0
    print(one_line(f"{args.file}: session {content['session']['id']}, {_summary(content)} as recorded by "
                   f"{data['written_by']} at {data['written_at']}"))
    for document in documents:
        print(one_line(_document_line(document)))
    if args.collections:
        moved = [c for c in citations if c.state == "moved"]
        print(f"collections: {len(citations)} citation{'' if len(citations) == 1 else 's'} checked, "
              f"{sum(1 for c in citations if not c.stale)} current, {len(moved)} moved")
        for check in moved:
            print(one_line(f"  [{check.number}] {check.cited}: {check.verdict}"))
    for failure in failures:
        print(one_line(f"FAIL {failure.path}: {failure.reason}"))
    print(_verdict(failures, documents))
    return 1 if failures else 0


def _in_collections(data: dict[str, Any], settings: Settings) -> list[CitationCheck]:
    """The bundle's citations checked against this data dir's collections as they are now."""
    from ragtui.bundle.read import conversation_of
    from ragtui.workspace import Workspace

    with Workspace(settings) as workspace:
        return list(workspace.recheck(conversation_of(data["content"])).checks)


def _citation_failure(content: dict[str, Any], check: CitationCheck) -> Failure:
    """A citation that no longer holds, named by the JSON path of its source in the bundle."""
    from ragtui.bundle.verify import Failure

    path = next((f"$.content.turns[{t}].sources[{i}]" for t, turn in enumerate(content["turns"])
                 for i, source in enumerate(turn["sources"]) if source["number"] == check.number),
                f"$.content (source [{check.number}])")
    return Failure(path, f"{check.cited}: {check.verdict}")


def _verdict(failures: list[Failure], documents: list[DocumentCheck]) -> str:
    if failures:
        return f"{len(failures)} failure{'s' if len(failures) != 1 else ''}"
    checked = sum(1 for d in documents if d.file)
    unchecked = len(documents) - checked
    return "verified: every hash and every check holds" + (
        f", and every cited passage of the {checked} document{'s' if checked != 1 else ''} compared is still in "
        f"it{f' ({unchecked} not compared)' if unchecked else ''}" if documents else "")


def _summary(content: dict[str, Any]) -> str:
    turns = content["turns"]
    sources = sum(len(t["sources"]) for t in turns)
    quotes = [q["state"] for t in turns for q in t["checks"]["quotes"]]
    states = ", ".join(f"{quotes.count(s)} {s.replace('_', ' ')}" for s in ("verified", "misattributed", "not_found")
                       if s in quotes)
    numbers = sum(len(t["checks"]["numbers"]) for t in turns)
    return (f"{len(turns)} turn{'s' if len(turns) != 1 else ''}, {sources} sources, {len(quotes)} quotes checked"
            f"{' (' + states + ')' if states else ''}, {numbers} number{'s' if numbers != 1 else ''} flagged")


def _document_line(document: DocumentCheck) -> str:
    name = f"{document.collection}/{document.document}"
    if document.state == "not given":
        return f"{name}: not checked (not the file given)"
    if document.state in ("gone", "unreadable"):
        return f"{name}: {document.state}"
    state = {"unchanged": "unchanged",
             "changed": f"changed since the session (sha256 was {document.sha256_then[:12]}, now "
                        f"{document.sha256_now[:12]})",
             "unknown": f"its sha256 then is unknown (now {document.sha256_now[:12]})"}[document.state]
    kept = document.passages - len(document.missing)
    return f"{name}: {state}; {kept} of {document.passages} cited passages still in it"
