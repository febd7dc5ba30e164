"""Your judgments as a test set: qrels built from a crafted history, `history judgments --export`, and
`eval --from-history` over a tiny collection through the fake Ollama server."""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ragtui.cli import main
from ragtui.evaluation.judgments import Kind, chunk_key, collect, query_id
from ragtui.history import HistoryStore
from ragtui.model.chunks import Chunk, ChunkMeta
from ragtui.model.conversation import AnnotationState, Conversation, Override, SessionSource, Turn
from tests.collection_builder import make_chunks
from tests.fake_ollama import FakeOllama, Reply

FILES = {"valves.md": "Valve seats wear out.", "gate.md": "Gate valves control the flow.",
         "pumps.md": "Centrifugal pumps need priming.", "fence.md": "Paint the fence.", "hinges.md": "Oil the hinges.",
         "floor.md": "Sweep the floor."}
# The chunks ingest cuts from these files (one each), as the sessions saw them.
CHUNKS = {c.text: c for c in make_chunks("docs", {name: [text] for name, text in FILES.items()})}
GATE, SEATS, PUMPS = CHUNKS["Gate valves control the flow."], CHUNKS["Valve seats wear out."], \
    CHUNKS["Centrifugal pumps need priming."]
FENCE, HINGES, FLOOR = CHUNKS["Paint the fence."], CHUNKS["Oil the hinges."], CHUNKS["Sweep the floor."]
# A chunk valves.md held before it was ingested again with other text: its judgment has no chunk now.
OLD = Chunk(id=SEATS.id, text="Valve seats wore out in the old edition.",
            meta=ChunkMeta(collection="docs", source="valves.md", file_hash="old", format="md", chunk_index=1,
                           char_start=0, char_end=40))
RELEVANT, IRRELEVANT = AnnotationState.RELEVANT, AnnotationState.IRRELEVANT


def source(number: int, chunk: Chunk, state: AnnotationState, override: Override = Override.NONE) -> SessionSource:
    return SessionSource(number, chunk, 1.0 - number / 10, 1.0, ("keyword",), state, override=override)


def crafted_history() -> list[Conversation]:
    """Session 1 asks "valve seats"; session 2 asks "priming pumps", then follows up with "and the seats?",
    rewritten to "valve seats": the same question over the same collection, so one query."""
    first = Turn(query="valve seats", answer="Seats wear [1], old ones too [7].", citations=(1, 7), sources=(
        source(1, SEATS, RELEVANT),                                   # kept and cited
        source(2, GATE, RELEVANT),                                    # kept, not cited: weak 1
        source(3, FENCE, IRRELEVANT),                                 # filtered, not rescued: weak 0
        source(4, PUMPS, IRRELEVANT, Override.RESCUED),               # rescued (dropped later, in session 2)
        source(5, HINGES, RELEVANT, Override.DROPPED),                # dropped
        source(6, FLOOR, AnnotationState.FAILED),                     # a failure judges nothing
        source(7, OLD, RELEVANT)))                                    # cited, its chunk since re-ingested away
    pumps = Turn(query="priming pumps", answer="Prime them [1].", citations=(1,), sources=(
        # annotation off, cited; saved under the id of another chunking (its 8th chunk): the same text, so the
        # same judged chunk, still in the collection
        source(1, replace(PUMPS, id=PUMPS.id[:-5] + "00007"), AnnotationState.OFF),
        source(2, FLOOR, IRRELEVANT, Override.RESCUED)))              # rescued
    follow = Turn(query="and the seats?", rewrite="Valve  Seats", sources=(
        source(3, SEATS, RELEVANT),                                   # kept uncited: weaker than session 1's cite
        source(4, PUMPS, RELEVANT, Override.DROPPED),                 # dropped: later than session 1's rescue
        source(5, FENCE, AnnotationState.PENDING)))                   # never annotated, not cited: nothing
    return [Conversation(collections=("docs",), config={}, synthesis_model="chat", annotation_model="chat",
                         turns=(first,)),
            Conversation(collections=("docs",), config={}, synthesis_model="chat", annotation_model="chat",
                         turns=(pumps, follow))]


def text_key(chunk: Chunk) -> str:
    return f"docs/{chunk.meta.source}#" + hashlib.sha256(chunk.text.encode()).hexdigest()[:16]


VALVE_Q, PUMP_Q = query_id("valve seats", ["docs"]), query_id("priming pumps", ["docs"])


def saved_history(data_dir: Path) -> list[Conversation]:
    store = HistoryStore(data_dir)
    return [store.save(conversation) for conversation in crafted_history()]


def test_qrels_from_a_crafted_history_match_the_hand_computed_ones(tmp_path: Path) -> None:
    judgments = collect(saved_history(tmp_path))
    assert chunk_key(SEATS) == text_key(SEATS) == "docs/valves.md#" + \
        hashlib.sha256(b"Valve seats wear out.").hexdigest()[:16]
    assert judgments.sessions == 2 and judgments.unjudged == 2          # the failed and the never-annotated
    assert set(judgments.queries) == {VALVE_Q, PUMP_Q}
    assert judgments.queries[VALVE_Q].asked == ("1.1", "2.2") and judgments.queries[VALVE_Q].text == "valve seats"
    standing = {(j.query_id, j.doc_id): j.kind for j in judgments.judgments}
    assert standing == {
        (VALVE_Q, text_key(SEATS)): Kind.CITED, (VALVE_Q, text_key(GATE)): Kind.KEPT,
        (VALVE_Q, text_key(FENCE)): Kind.FILTERED, (VALVE_Q, text_key(PUMPS)): Kind.DROPPED,
        (VALVE_Q, text_key(HINGES)): Kind.DROPPED, (VALVE_Q, text_key(OLD)): Kind.CITED,
        (PUMP_Q, text_key(PUMPS)): Kind.CITED, (PUMP_Q, text_key(FLOOR)): Kind.RESCUED}
    assert judgments.qrels(weak=False) == {VALVE_Q: {text_key(SEATS): 2, text_key(OLD): 2},
                                           PUMP_Q: {text_key(PUMPS): 2, text_key(FLOOR): 2}}
    assert judgments.qrels(weak=True, leave_out={text_key(OLD)}) == {
        VALVE_Q: {text_key(SEATS): 2, text_key(GATE): 1}, PUMP_Q: {text_key(PUMPS): 2, text_key(FLOOR): 2}}
    assert collect(saved_history(tmp_path / "other"), ["notes"]).sessions == 0


def flags(tmp_path: Path, fake: FakeOllama) -> list[str]:
    return ["--config", os.devnull, "--data-dir", str(tmp_path / "data"), "--ollama-host", fake.url,
            "--set", "synonyms.enabled=false"]


@pytest.fixture
def judged(fake_ollama: FakeOllama, tmp_path: Path) -> Path:
    """The files ingested into collection "docs" (through the fake Ollama), and the crafted sessions saved."""
    folder = tmp_path / "papers"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text + "\n", encoding="utf-8")
    assert main([*flags(tmp_path, fake_ollama), "ingest", str(folder), "-c", "docs"]) == 0
    saved_history(tmp_path / "data")
    return tmp_path / "data"


def test_history_judgments_lists_counts_and_exports_beir_qrels(judged: Path, fake_ollama: FakeOllama,
                                                               tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "mine.tsv"
    assert main([*flags(tmp_path, fake_ollama), "history", "judgments", "--export", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "8 judgments of 2 questions in 2 sessions:" in out
    assert "  cited         3  relevant (2)" in out and "  rescued       1" in out and "  dropped       2" in out
    assert "  kept          1  weak" in out and "  filtered      1  weak" in out and "  (none)        2" in out
    assert "1 judged chunks are no longer in their collection" in out
    assert "session 1 [7] docs/valves.md (cited): its text is no longer in the collection" in out
    rows = out_file.read_text().splitlines()
    assert rows == ["query-id\tcorpus-id\tscore",
                    f"{VALVE_Q}\t{text_key(SEATS)}\t2", f"{VALVE_Q}\t{text_key(PUMPS)}\t0",
                    f"{VALVE_Q}\t{text_key(HINGES)}\t0", f"{VALVE_Q}\t{text_key(OLD)}\t2",
                    f"{PUMP_Q}\t{text_key(PUMPS)}\t2", f"{PUMP_Q}\t{text_key(FLOOR)}\t2"]
    queries = [json.loads(line) for line in (tmp_path / "mine.queries.jsonl").read_text().splitlines()]
    assert queries == [{"_id": VALVE_Q, "text": "valve seats", "metadata": {"collections": ["docs"],
                                                                            "asked": ["1.1", "2.2"]}},
                       {"_id": PUMP_Q, "text": "priming pumps", "metadata": {"collections": ["docs"],
                                                                             "asked": ["2.1"]}}]
    assert main([*flags(tmp_path, fake_ollama), "history", "judgments", "--weak", "--export", str(out_file)]) == 0
    assert len(out_file.read_text().splitlines()) == 1 + 8
    capsys.readouterr()
    assert main([*flags(tmp_path, fake_ollama), "history", "judgments", "--export", str(tmp_path)]) == 2
    assert f"cannot write {tmp_path}" in capsys.readouterr().err
    assert main([*flags(tmp_path, fake_ollama), "history", "judgments", "notes"]) == 0
    assert "No saved session that searched notes." in capsys.readouterr().out


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file of the collection but Chroma's own, which Chroma rewrites whenever a client closes (after any
    `ragtui query` as well): the manifest, the ingest records, the keyword index."""
    digests = {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
               for p in sorted(folder.rglob("*")) if p.is_file() and "chroma" not in p.relative_to(folder).parts}
    assert "records.sqlite3" in digests
    return digests


def test_eval_from_history_scores_the_users_collection_read_only(judged: Path, fake_ollama: FakeOllama,
                                                                 tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Keyword mode puts "Valve seats wear out." first for "valve seats" (its one relevant chunk left: the old
    one is gone; then "Gate valves control the flow.", not judged without --weak): MRR 1, P@5 1/5. For "priming
    pumps" it finds the pumps chunk first but never "Sweep the floor." (rescued, and sharing no word with the
    question): recall@10 1/2, nDCG@10 = 2 / (2 + 2/log2(3)). The collection's own files are not written."""
    collection = judged / "collections" / "docs"
    before = tree_digest(collection)
    assert main([*flags(tmp_path, fake_ollama), "eval", "--from-history", "--modes", "keyword", "vector",
                 "--compare", "keyword", "vector", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert tree_digest(collection) == before
    # judged chunks still in the collection: seats, pumps, hinges for "valve seats"; pumps, floor for "priming pumps"
    assert report["queries"] == 2 and report["documents"] == 5 and report["chunks"] == 6
    keyword = report["per_query"]["keyword"]
    assert keyword[VALVE_Q]["mrr@10"] == 1.0 and keyword[VALVE_Q]["recall@10"] == 1.0
    assert keyword[VALVE_Q]["p@5"] == pytest.approx(0.2)
    assert keyword[PUMP_Q]["mrr@10"] == 1.0 and keyword[PUMP_Q]["recall@10"] == 0.5
    assert keyword[PUMP_Q]["ndcg@10"] == pytest.approx(2 / (2 + 2 / math.log2(3)))
    assert report["results"]["keyword"]["recall@10"]["mean"] == pytest.approx(0.75)
    diff = report["comparisons"]["keyword vs vector"]["ndcg@10"]["diff"]
    assert diff == pytest.approx(report["results"]["vector"]["ndcg@10"]["mean"]
                                 - report["results"]["keyword"]["ndcg@10"]["mean"])
    notices = report["notices"]
    assert any(n.startswith("1 judged chunks are no longer in their collection") for n in notices)
    assert any(n.startswith("2 weak labels") for n in notices)
    assert any(n.startswith("only 2 queries") for n in notices)
    # "valve seats": the keyword leg finds the seats (judged) and the gate valves (a weak label, left out);
    # "priming pumps": only the pumps (judged)
    assert "keyword: 75% of each query's top 10 on average was judged (the rest counts as not relevant)" in notices
    assert report["settings"]["judged"] == {"cited": 3, "kept": 1, "filtered": 1, "dropped": 2, "rescued": 1}


def test_eval_from_history_weak_labels_and_errors(judged: Path, fake_ollama: FakeOllama, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """With --weak, "Gate valves control the flow." (kept by the annotator, grade 1) joins "valve seats"'s
    relevant chunks; keyword mode ranks it second, after "Valve seats wear out.", and finds nothing else: P@5 2/5
    (1/5 without it), nDCG@10 still 1, and all of the top 10 judged."""
    assert main([*flags(tmp_path, fake_ollama), "eval", "--from-history", "docs", "--modes", "keyword",
                 "--weak"]) == 0
    out = capsys.readouterr().out
    assert "your judgments in docs: 2 queries" in out and "| keyword |" in out
    assert main([*flags(tmp_path, fake_ollama), "eval", "--from-history", "docs", "--modes", "keyword", "--weak",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    valve = report["per_query"]["keyword"][VALVE_Q]
    assert valve["p@5"] == pytest.approx(0.4) and valve["ndcg@10"] == 1.0
    assert "keyword: 100% of each query's top 10 on average was judged (the rest counts as not relevant)" in \
        report["notices"]
    assert main([*flags(tmp_path, fake_ollama), "eval", "--from-history", "notes"]) == 1
    assert "no saved session that searched notes" in capsys.readouterr().err
    assert main([*flags(tmp_path, fake_ollama), "eval", "--from-history", "--dataset", str(tmp_path)]) == 2


def test_eval_from_history_retrieves_concurrency_queries_at_once(judged: Path, fake_ollama: FakeOllama,
                                                                 tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """--concurrency 1 reaches the run: with HyDE asking the chat model for each of the two questions (each
    reply held 0.3 s, so two queries at once would overlap), one model call is open at a time."""
    def slow_passage(body: dict[str, Any]) -> Reply:
        time.sleep(0.3)
        question = str(body["messages"][-1]["content"]).split("Question: ", 1)[1].split("\n", 1)[0]
        return Reply.text(f"In short, {question} is explained here.")

    fake_ollama.responder = slow_passage
    assert main([*flags(tmp_path, fake_ollama), "--set", "llm.model=chat", "--set", "strategies.hyde=on", "eval",
                 "--from-history", "--modes", "hybrid", "--concurrency", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["queries"] == 2 and len(fake_ollama.calls("/api/chat")) == 2
    assert fake_ollama.max_in_flight == 1
