"""Deep research against ordinary ask on a multi-hop set, paired per question, through the CLI a user runs.

    python -m benchmarks.research_vs_ask --work DIR [--dataset benchmarks/data/hotpotqa-sample] [--hash]
        [--modes ask,research] [--limit N] [--label NAME] [--ollama-host URL] [--set KEY=VALUE ...]

What it does, in DIR:
1. writes each document of the BEIR folder as a text file (`<id>.txt`: its
   title, then its text) and ingests them with `ragtui ingest` into the
   collection `multihop` (once; a later run reuses it);
2. runs, for each question and each mode, `ragtui ask QUESTION -c multihop
   --json` and `ragtui research QUESTION -c multihop --json` in a fresh
   process, one at a time, timed from the process's start to its exit (wall,
   and the child's user + system CPU);
3. scores each run and prints, per metric, each mode's mean with its 95%
   bootstrap CI, the paired difference research - ask with its CI (the
   eval's `paired_bootstrap`: the questions resampled together), and the
   metric's floor and ceiling.

The embedder and chat model are `ragtui`'s settings: by default this starts
`mini_ollama.py` (../shared/tools; its all-MiniLM embedder, or hashed vectors
with --hash) and answers with its `extractive` stand-in; `--set` passes
settings on to every command (e.g. `llm.provider=openai`,
`llm.base_url=http://127.0.0.1:8080/v1`, `llm.model=smollm2` for
SmolLM2-135M on llama-cpp-python's server). Each run's scores are appended to
`DIR/runs-LABEL.jsonl` as they come, so a run cut short goes on where it
stopped.

Metrics (per question; the question's evidence documents are its qrels):
- evidence_retrieved / evidence_kept / evidence_cited: the share of the
  evidence documents among the sources the run retrieved, kept (relevant after
  annotation: what the answer is written from) and cited; evidence_all_kept:
  1 when every evidence document was kept (every hop found). Floor: what
  keeping as many documents drawn at random from the corpus would score on
  average (kept documents / corpus size for the shares; for all-kept, the
  chance that such a draw holds every evidence document); ceiling 1.
- answer_contains, answer_recall, rouge_l, answer_f1: the answer eval's text
  metrics (`evaluation/answer_metrics.py`), beside their floor (another
  question's reference as the answer, `evaluation/bounds.py`) and ceiling
  (the question's evidence documents' texts, joined, as the answer: a
  faithful copy of every hop's evidence).
- llm_calls: the chat calls of the run, counted at mini_ollama
  (`/api/_stats`, before and after) when it serves the chat model; with
  another chat server, what the run's JSON reports (ask: one call per
  annotated source, one for the answer, one per continuation and strategy
  call; retries are not seen).
- seconds, cpu_s: the ragtui process's wall time and CPU (the servers' CPU is
  not in it).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtui.evaluation.answer_metrics import TEXT_METRICS, summarise_answers, text_scores
from ragtui.evaluation.beir import Dataset, load_dataset
from ragtui.evaluation.bounds import BoundAnswer, bound_answers, score_bounds
from ragtui.evaluation.metrics import bootstrap_ci, paired_bootstrap

ROOT = Path(__file__).resolve().parent.parent
MINI_OLLAMA = ROOT.parent / "shared" / "tools" / "mini_ollama.py"
COLLECTION = "multihop"
MODES = ("ask", "research")
EVIDENCE_METRICS = ("evidence_retrieved", "evidence_kept", "evidence_cited", "evidence_all_kept")
COST_METRICS = ("llm_calls", "seconds", "cpu_s")
METRICS = (*EVIDENCE_METRICS, *TEXT_METRICS, *COST_METRICS)
FINISHED_STATES = ("relevant", "irrelevant", "failed")     # a source whose annotation call was made


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return dict(json.loads(reply.read()))


def start_mini_ollama(python: str, hashed: bool) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    server = subprocess.Popen([python, str(MINI_OLLAMA), "--port", str(port), *(["--hash"] if hashed else [])],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120                   # the real embedder loads torch first
    while time.monotonic() < deadline:
        try:
            get_json(f"{url}/api/version")
            return server, url
        except OSError:
            if server.poll() is not None:
                raise RuntimeError(f"mini_ollama exited {server.returncode}") from None
            time.sleep(0.5)
    server.terminate()
    raise RuntimeError("mini_ollama did not answer in 120 s")


def ragtui(work: Path, host: str, sets: Sequence[str], *command: str) -> tuple[str, float, float, int]:
    """One `ragtui` process: (stdout, wall seconds, user + system CPU seconds, exit code); a failure that printed
    nothing raises with its stderr (one that printed its JSON, a stage failed, is scored)."""
    argv = [sys.executable, "-m", "ragtui", "--config", "/dev/null", "--data-dir", str(work / "data"),
            "--ollama-host", host, "--set", "embed.model=all-minilm", *(a for s in sets for a in ("--set", s)),
            *command]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err, text=True, cwd=ROOT,
                                 env={**os.environ, "XDG_CONFIG_HOME": str(work / "no-config")})
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    code = os.waitstatus_to_exitcode(status)
    if code != 0 and not stdout.strip():
        raise RuntimeError(f"ragtui {command[0]} exited {code}: {stderr[-2000:]}")
    return stdout, wall, usage.ru_utime + usage.ru_stime, code


def ingest(work: Path, dataset: Dataset, host: str, sets: Sequence[str], embedder: str) -> None:
    marker = work / "ingested.json"
    wanted = {"dataset": dataset.name, "documents": len(dataset.corpus), "embedder": embedder}
    if marker.is_file():
        done = json.loads(marker.read_text())
        if done != wanted:
            raise SystemExit(f"{work} holds another ingest ({done}); give another --work")
        return
    docs = work / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for doc in dataset.corpus.values():
        (docs / f"{doc.id}.txt").write_text(doc.content, encoding="utf-8")
    out, wall, cpu, _ = ragtui(work, host, sets, "ingest", str(docs), "-c", COLLECTION)
    print(out.strip().splitlines()[-3] if out.strip() else "", f"({wall:.1f} s wall, {cpu:.1f} s CPU)")
    marker.write_text(json.dumps(wanted))


def doc_of(source: Mapping[str, Any]) -> str:
    return Path(str(source["source"])).stem


def ask_calls(reply: Mapping[str, Any]) -> int:
    """The chat calls an `ask --json` reply shows: each annotated source, the answer, its continuations and the
    retrieval strategies' calls (a retried call counts once)."""
    annotated = sum(1 for s in reply["sources"] if s["state"] in FINISHED_STATES)
    strategies = (reply.get("retrieval_meta") or {}).get("strategies") or {}
    return annotated + bool(reply["answer"]) + int(reply.get("continuations") or 0) + int(
        strategies.get("llm_calls") or 0)


def ask_outcome(reply: Mapping[str, Any]) -> dict[str, Any]:
    """What an `ask --json` reply retrieved, kept and cited (document ids), its answer and its calls."""
    sources = reply["sources"]
    cited = set(reply.get("citations") or [])
    return {"retrieved": [doc_of(s) for s in sources], "kept": [doc_of(s) for s in sources if s["relevant"]],
            "cited": [doc_of(s) for s in sources if s["number"] in cited], "answer": reply["answer"],
            "calls": ask_calls(reply), "session": reply.get("session"), "extra": {}}


def research_outcome(reply: Mapping[str, Any]) -> dict[str, Any]:
    """What a `research --json` reply retrieved over all its searches, kept (each search's kept sources: what
    the report is written from) and cited in its report, the report, the calls it counted, and its shape (the
    sub-questions, searches and rounds, who planned, the limits it reached)."""
    sources = reply["sources"]
    cited = set(reply.get("citations") or [])
    return {"retrieved": [doc_of(s) for s in sources], "kept": [doc_of(s) for s in sources if s["kept"]],
            "cited": [doc_of(s) for s in sources if s["number"] in cited], "answer": reply["report"],
            "calls": int(reply["model_calls"]), "session": reply.get("session"),
            "extra": {"parts": len(reply["plan"]), "searches": len(reply["searches"]), "rounds": reply["rounds"],
                      "planned_by": reply["planned_by"], "limits_hit": reply["limits_hit"],
                      "reported_calls": reply["model_calls"], "tokens": reply["tokens"]}}


OUTCOMES = {"ask": ask_outcome, "research": research_outcome}


def score(outcome: Mapping[str, Any], evidence: set[str], references: Sequence[str],
          corpus_size: int) -> dict[str, float]:
    def share(docs: Sequence[str]) -> float:
        return len(evidence & set(docs)) / len(evidence)

    kept = set(outcome["kept"])
    all_drawn = 1.0                         # a random draw of len(kept) documents holding every evidence one
    for i in range(len(evidence)):
        all_drawn *= max(0, len(kept) - i) / (corpus_size - i)
    return {"evidence_retrieved": share(outcome["retrieved"]), "evidence_kept": share(outcome["kept"]),
            "evidence_cited": share(outcome["cited"]), "evidence_all_kept": float(evidence <= kept),
            "evidence_floor": min(1.0, len(kept) / corpus_size), "evidence_all_kept_floor": all_drawn,
            **text_scores(outcome["answer"], references)}


def run_one(mode: str, qid: str, work: Path, dataset: Dataset, host: str, sets: Sequence[str],
            counted: bool) -> dict[str, Any]:
    before = get_json(f"{host}/api/_stats").get("chat_requests", 0) if counted else 0
    stdout, wall, cpu, code = ragtui(work, host, sets, mode, dataset.queries[qid], "-c", COLLECTION, "--json")
    reply = json.loads(stdout)
    outcome = OUTCOMES[mode](reply)
    calls = get_json(f"{host}/api/_stats").get("chat_requests", 0) - before if counted else outcome["calls"]
    row = score(outcome, set(dataset.qrels[qid]), dataset.answers[qid], len(dataset.corpus))
    return {"mode": mode, "qid": qid, **row, "llm_calls": float(calls), "seconds": round(wall, 3),
            "cpu_s": round(cpu, 3), "exit_code": code, "answer": outcome["answer"], "session": outcome["session"],
            "kept": outcome["kept"], **outcome["extra"]}


def interval(values: Sequence[float]) -> dict[str, float]:
    lo, hi = bootstrap_ci(values)
    return {"mean": sum(values) / len(values), "ci_low": lo, "ci_high": hi, "n": float(len(values))}


def summarise(rows: Sequence[Mapping[str, Any]], dataset: Dataset, modes: Sequence[str]) -> dict[str, Any]:
    """Per mode, metric -> mean [CI] with floor and ceiling; and metric -> paired research - ask, over the
    questions both modes ran."""
    by_mode = {m: {r["qid"]: r for r in rows if r["mode"] == m} for m in modes}
    qids = sorted(set.intersection(*(set(v) for v in by_mode.values())))
    stand_ins = bound_answers(dataset, qids)
    stand_ins["passage"] = {q: BoundAnswer("\n".join(dataset.corpus[d].text for d in dataset.qrels[q]),
                                           dataset.answers[q]) for q in qids}
    bounds = score_bounds(stand_ins)
    out: dict[str, Any] = {"questions": len(qids), "modes": {}}
    for mode, runs in by_mode.items():
        per_question = {q: runs[q] for q in qids}
        summary = {k: v for k, v in summarise_answers(per_question, bounds).items() if k in METRICS}
        for name in EVIDENCE_METRICS:
            floor = "evidence_all_kept_floor" if name == "evidence_all_kept" else "evidence_floor"
            summary[name] = {**interval([per_question[q][name] for q in qids]),
                             "floor": interval([per_question[q][floor] for q in qids]),
                             "ceiling": {"all": interval([1.0] * len(qids))}}
        summary["cpu_s"] = {**interval([per_question[q]["cpu_s"] for q in qids]), "floor": None, "ceiling": None}
        out["modes"][mode] = summary
    if len(modes) == 2:
        a, b = (by_mode[m] for m in modes)
        out["paired"] = {name: paired_bootstrap([a[q][name] for q in qids], [b[q][name] for q in qids])
                         for name in METRICS}
    return out


def run_shapes(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the research runs did: sub-questions, searches and rounds (mean, max), who planned, the limits
    reached, and in how many runs the calls the run reported differ from those counted at the server."""
    runs = [r for r in rows if r["mode"] == "research"]
    if not runs:
        return {}
    out: dict[str, Any] = {key: {"mean": sum(r[key] for r in runs) / len(runs), "max": max(r[key] for r in runs)}
                           for key in ("parts", "searches", "rounds")}
    out["planned_by"] = dict(Counter(r["planned_by"] for r in runs))
    out["limits_hit"] = dict(Counter(limit for r in runs for limit in r["limits_hit"]))
    out["calls_reported_differ"] = sum(r["reported_calls"] != r["llm_calls"] for r in runs)
    return out


def table(summary: Mapping[str, Any], modes: Sequence[str]) -> str:
    def cell(stat: Mapping[str, float] | None) -> str:
        return "-" if not stat else f"{stat['mean']:.3f} [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"

    paired = summary.get("paired")
    head = ["metric", *modes, *([f"{modes[1]} - {modes[0]} (b wins)"] if paired else []), "floor", "ceiling"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in METRICS:
        stats = [summary["modes"][m].get(name) for m in modes]
        first = next((s for s in stats if s), None)
        if first is None:
            continue
        ceiling = first.get("ceiling") or {}
        row = [name, *(cell(s) for s in stats)]
        if paired:
            d = paired[name]
            row.append(f"{d['diff']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] ({d['b_wins']:.2f})")
        row += [cell(first.get("floor")), cell(ceiling.get("passage") or ceiling.get("all"))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="folder for the documents, data dir and results")
    parser.add_argument("--dataset", type=Path, default=ROOT / "benchmarks" / "data" / "hotpotqa-sample")
    parser.add_argument("--modes", default="ask,research", help="comma-separated, of: " + ", ".join(MODES))
    parser.add_argument("--limit", type=int, help="the first N questions")
    parser.add_argument("--label", default="run", help="names the results file, runs-LABEL.jsonl")
    parser.add_argument("--hash", action="store_true", help="mini_ollama's hashed vectors, not all-MiniLM")
    parser.add_argument("--ollama-host", help="a running mini_ollama (else one is started)")
    parser.add_argument("--mini-ollama-python", default=str(Path.home() / ".mini-ollama" / "bin" / "python"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="passed to every command")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))      # so that `finally` stops mini_ollama
    modes = [m for m in args.modes.split(",") if m]
    if unknown := [m for m in modes if m not in OUTCOMES]:
        parser.error(f"no scorer for mode {unknown[0]} (known: {', '.join(OUTCOMES)})")
    dataset = load_dataset(args.dataset).limited(args.limit)
    sets = args.set if any(s.startswith("llm.model=") for s in args.set) else ["llm.model=extractive", *args.set]
    counted = not any(s.startswith(("llm.provider=", "llm.base_url=")) for s in sets)
    args.work.mkdir(parents=True, exist_ok=True)
    server = None
    if args.ollama_host:
        host = args.ollama_host.rstrip("/")
    else:
        server, host = start_mini_ollama(args.mini_ollama_python, args.hash)
    try:
        ingest(args.work, dataset, host, [], "hash" if args.hash else "all-minilm")
        results = args.work / f"runs-{args.label}.jsonl"
        rows = [json.loads(line) for line in results.read_text().splitlines()] if results.is_file() else []
        done = {(r["mode"], r["qid"]) for r in rows}
        for i, qid in enumerate(dataset.queries, 1):
            for mode in modes:
                if (mode, qid) in done:
                    continue
                row = run_one(mode, qid, args.work, dataset, host, sets, counted)
                rows.append(row)
                with results.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                failed = f" (exit {row['exit_code']})" if row["exit_code"] else ""
                print(f"{i}/{len(dataset.queries)} {mode}{failed}: evidence kept {row['evidence_kept']:.2f}, contains "
                      f"{row['answer_contains']:.0f}, {row['llm_calls']:.0f} calls, {row['seconds']:.1f} s",
                      flush=True)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    rows = [r for r in rows if r["qid"] in dataset.queries and r["mode"] in modes]
    summary = {**summarise(rows, dataset, modes), "research_runs": run_shapes(rows),
               "failed_runs": {m: sum(r["mode"] == m and r.get("exit_code", 0) != 0 for r in rows) for m in modes}}
    print(table(summary, modes))
    print(json.dumps({k: summary[k] for k in ("research_runs", "failed_runs")}))
    (args.work / f"summary-{args.label}.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
