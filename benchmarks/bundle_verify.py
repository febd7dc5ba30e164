"""What `ragtui history bundle` and `ragtui verify` cost, through the CLI as a user runs them.

    .venv/bin/python -m benchmarks.bundle_verify [--runs 3]

Two saved sessions, written straight into a history file: a typical one (1 turn, 16 sources of 1,500
characters, an answer of 20 cited sentences quoting 10 passages and stating 10 figures) and one near the most
checking `verify` accepts (`bundle.checks.MAX_WORK`: 4 turns of 100 sources of 2,000 characters, each answer
with 7 cited quotes and 7 cited figures). Each is bundled and verified by `python -m ragtui`; the yardstick is
`ragtui history show` of the same session in the same run (the same start-up and history read). Wall and CPU
(the child's user + system) are the medians of --runs runs.

Then two bundles built to make `verify` work, written directly (every quote of the answer is looked up in every
source): 600 sources of 800 characters with 90 cited quotes (just under MAX_WORK: checked), and 600 sources of 20,000
characters with 2,000 (far over it: refused before any check).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ragtui.bundle.checks import MAX_WORK, work
from ragtui.bundle.integrity import record, sha256_text
from ragtui.bundle.write import dumps
from ragtui.history import HistoryStore
from ragtui.model.chunks import Chunk, ChunkMeta
from ragtui.model.conversation import AnnotationState, Conversation, SessionSource, Turn

WORDS = ["pump", "valve", "pressure", "seal", "rotor", "housing", "flow", "bearing", "gasket", "impeller"]


def _text(turn: int, n: int, chars: int) -> str:
    words = [f"{WORDS[(n * 7 + i) % len(WORDS)]}{(turn * 131 + n * 17 + i) % 97}" for i in range(chars // 8)]
    return " ".join(words)[:chars] + f" rated {n + 10}% at {n + 100} bar."


def session(turns: int, sources: int, chars: int, quotes: int) -> Conversation:
    done, number = [], 1
    for t in range(turns):
        made = [SessionSource(number=number + i, score=0.5, rel_score=0.5, legs=("vector",),
                              state=AnnotationState.RELEVANT, annotation="Relevant: the rating.",
                              chunk=Chunk(f"c{t}-{i}", _text(t, i, chars),
                                          meta=ChunkMeta("docs", f"f{i}.md", "0" * 64, "md", i, 0, chars)))
                for i in range(sources)]
        sentences = [f'[{s.number}] says "{" ".join(s.chunk.text.split()[2:6])}" [{s.number}].'
                     for s in made[:quotes]]
        sentences += [f"It is rated {i + 10}% at {i + 101} bar [{made[i].number}]." for i in range(quotes)]
        done.append(Turn(f"question {t}", sources=tuple(made), answer=" ".join(sentences),
                         prompt=(("user", "QUESTION: question"),), prompt_numbers=tuple(s.number for s in made),
                         citations=tuple(s.number for s in made[:quotes])))
        number += sources
    return Conversation(["docs"], {"llm.model": "chat"}, "chat", "chat", turns=done)


def hostile(sources: int, chars: int, quotes: int) -> dict[str, object]:
    """A bundle valid under the schema whose answer's quotes are each looked up in every one of many sources (each
    text its own, so that no cache of folded texts holds them all)."""
    text = ("lorem ipsum dolor sit amet " * (chars // 27 + 1))[:chars]
    source = {"collection": "c", "document": "d.md", "document_sha256": None, "document_hashed": "unknown",
              "format": "md", "page": "", "pages": "", "page_breaks": "", "heading": "", "chunk_id": "x",
              "chunk_index": 0, "char_start": 0, "char_end": chars, "lead": 0, "verdict": "relevant",
              "override": "", "annotation": "", "annotated_by": "", "annotation_prompt": "",
              "used": True, "misquoted": []}
    turn = {"question": "q", "rewrite": "", "rewrite_by": "", "stop_reason": "stop", "continuations": 0,
            "answer": " ".join(f'It says "alpha beta gamma{q}" [1].' for q in range(quotes)), "prompt": [],
            "prompt_sources": [1], "citations": [1], "unknown_citations": [],
            "sources": [{"number": n, **source, "text": f"{text} s{n}", "text_sha256": sha256_text(f"{text} s{n}")}
                        for n in range(1, sources + 1)],
            "checks": {"quotes": [], "numbers": [], "echo": False, "non_answer": False, "uncited": False}}
    content = {"session": {"id": 1, "created_at": "", "updated_at": "", "collections": ["c"]},
               "models": {"synthesis": "m", "annotation": "m", "annotation_on": True}, "settings": {}, "research": None,
               "turns": [turn]}
    return {"format": "ragtui-session-bundle", "version": 1, "written_by": "", "written_at": "", "content": content,
            "integrity": record(content)}


def run(data: Path, *args: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ragtui", "--data-dir", str(data), *args], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'session':<34} {'work':>12} {'size':>8}  {'step':<14} {'wall s':>7} {'cpu s':>7} {'cpu / show':>10}")
    for name, shape in (("typical (1 x 16 x 1,500, 10 q)", (1, 16, 1500, 10)),
                        ("large (4 x 100 x 2,000, 7 q)", (4, 100, 2000, 7))):
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp)
            conversation = HistoryStore(data).save(session(*shape))
            out = data / "bundle.json"
            sid = str(conversation.id)
            steps = {"history show": median([run(data, "history", "show", sid) for _ in range(args.runs)]),
                     "history bundle": median([run(data, "history", "bundle", sid, "-o", str(out))
                                               for _ in range(args.runs)]),
                     "verify": median([run(data, "verify", str(out)) for _ in range(args.runs)])}
            check = subprocess.run([sys.executable, "-m", "ragtui", "--data-dir", str(data), "verify", str(out)],
                                   capture_output=True, text=True, check=False)
            assert check.returncode == 0, check.stdout + check.stderr
            size = f"{out.stat().st_size / 2**20:.2f} MiB"
            for step, (wall, cpu) in steps.items():
                print(f"{name:<34} {work(conversation):>12,} {size:>8}  {step:<14} {wall:7.2f} {cpu:7.2f} "
                      f"{cpu / steps['history show'][1]:10.2f}")
    for name, shape in (("hostile, under (600 x 800, 90 q)", (600, 800, 90)),
                        ("hostile, over (600 x 20,000, 2,000 q)", (600, 20000, 2000))):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bundle.json"
            out.write_text(dumps(hostile(*shape)))
            wall, cpu = median([run(Path(tmp), "verify", str(out)) for _ in range(args.runs)])
            refused = subprocess.run([sys.executable, "-m", "ragtui", "verify", str(out)], capture_output=True,
                                     check=False).returncode == 2
            print(f"{name:<34} {'':>12} {out.stat().st_size / 2**20:>4.2f} MiB  {'verify':<14} {wall:7.2f} {cpu:7.2f}"
                  f"  {'refused' if refused else 'checked'}")
    print(f"(MAX_WORK = {MAX_WORK:,})")


if __name__ == "__main__":
    main()
