from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragtui.cli import main
from ragtui.config import Settings
from tests.collection_builder import build_collection
from tests.fake_ollama import FakeOllama, Reply


def flags(tmp_path: Path, fake: FakeOllama) -> list[str]:
    return ["--config", os.devnull, "--data-dir", str(tmp_path / "data"),
            "--ollama-host", fake.url, "--set", "synonyms.enabled=false"]


@pytest.fixture
def collection(make_settings: Callable[..., Settings]) -> Settings:
    settings = make_settings()
    build_collection(settings, "docs", {"valves.md": ["Gate valves control the flow.", "Valve seats wear out."],
                                        "pumps.md": ["Centrifugal pumps need priming."],
                                        "misc.md": ["Paint the fence.", "Oil the hinges.", "Sweep the floor."]})
    return settings


def test_query_json_has_nodes_and_meta(collection: Settings, fake_ollama: FakeOllama, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama), "query", "valve seats", "-c", "docs", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["nodes"][0]["source"] == "valves.md" and out["nodes"][0]["rel_score"] == 1.0
    assert set(out["nodes"][0]["legs"]) == {"vector", "keyword"}
    assert out["retrieval_meta"]["collections"]["docs"]["keyword"]["kept"] == ["seats", "valve"]


def test_query_table_and_errors(collection: Settings, fake_ollama: FakeOllama, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama), "query", "priming pumps", "--mode", "keyword"]) == 0
    out = capsys.readouterr().out
    assert "pumps.md" in out and "Centrifugal pumps need priming." in out
    assert "Collection docs: keyword tier 2 (any word or synonym, OR); fusion single leg" in out
    assert "  words kept: priming (IDF 1.25), pumps (IDF 1.25)" in out
    # keyword mode: one leg, so the fused score is the BM25 score, as the score column says
    score = out.splitlines()[1].split()[1]
    assert f"keyword #1 {score} · fused #1 {score}" in out
    assert main([*flags(tmp_path, fake_ollama), "query", "x", "-c", "nope"]) == 1
    assert "no collection named 'nope'" in capsys.readouterr().err


def untimed(value: object) -> object:
    """The JSON without its timings (they differ from run to run)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if "ms" not in k and "timings" not in k}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def test_batch_queries_print_one_query_json_per_line(collection: Settings, fake_ollama: FakeOllama,
                                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "queries.txt"
    queries.write_text("valve seats\n\n  priming pumps  \n", encoding="utf-8")
    assert main([*flags(tmp_path, fake_ollama), "query", "--queries", str(queries), "-c", "docs", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    for line, query in zip(lines, ("valve seats", "priming pumps"), strict=True):
        assert main([*flags(tmp_path, fake_ollama), "query", query, "-c", "docs", "--json"]) == 0
        single = json.loads(capsys.readouterr().out)
        batch = json.loads(line)
        assert batch["query"] == query and batch["retrieval_meta"]["collections"]["docs"]["timings_ms"]
        assert untimed(batch) == untimed(single)
    assert main([*flags(tmp_path, fake_ollama), "query", "--queries", str(queries), "--mode", "keyword"]) == 0
    out = capsys.readouterr().out
    assert "== valve seats" in out and "== priming pumps" in out and "Centrifugal pumps need priming." in out


@pytest.mark.parametrize("command", [["query"], ["query", "x", "--queries", "q.txt"],
                                     ["query", "--queries", "missing.txt"]])
def test_batch_query_usage_errors_exit_2(command: list[str], collection: Settings, fake_ollama: FakeOllama,
                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama), *command]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("command", [["query", "x", "-c", "nope"], ["ask", "x", "-c", "nope"],
                                     ["collections", "info", "nope"], ["collections", "delete", "nope", "--yes"]])
def test_an_unknown_collection_exits_1_in_every_command(command: list[str], collection: Settings,
                                                        fake_ollama: FakeOllama, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*flags(tmp_path, fake_ollama), "--set", "llm.model=chat", *command]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no collection named 'nope'" in err


def write_beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    docs = {"d1": ("Turbines", "Gas turbine blades are cooled by air."),
            "d2": ("Wings", "Swept wings delay compressibility drag."),
            "d3": ("Boundary_layers", "Laminar boundary layers separate under adverse gradients.")}
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n"
                                                 for k, (t, x) in docs.items()))
    queries = {"q1": "turbine blade cooling", "q2": "swept wing drag", "q3": "boundary layer separation",
               "q4": "unjudged query"}
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\nq3\td3\t1\n")
    return folder


def test_eval_reports_every_mode_and_cleans_up(fake_ollama: FakeOllama, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_beir(tmp_path / "mini")
    assert main([*flags(tmp_path, fake_ollama), "eval", "--dataset", str(dataset), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["queries"] == 3 and report["documents"] == 3
    assert list(report["results"]) == ["keyword", "vector", "hybrid", "hybrid-nosyn"]
    assert report["results"]["keyword"]["ndcg@10"]["mean"] == pytest.approx(1.0)
    assert report["results"]["hybrid"]["recall@100"]["mean"] == pytest.approx(1.0)
    assert not (tmp_path / "data" / "collections").exists() or not any((tmp_path / "data" / "collections").iterdir())


def test_eval_table_and_limit(fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_beir(tmp_path / "mini")
    assert main([*flags(tmp_path, fake_ollama), "eval", "--dataset", str(dataset), "--limit", "2",
                 "--modes", "keyword", "vector"]) == 0
    out = capsys.readouterr().out
    assert "mini: 2 queries" in out and "| keyword | 1.000" in out and "| vector |" in out
    assert main([*flags(tmp_path, fake_ollama), "eval", "--dataset", str(tmp_path / "missing")]) == 2


def test_eval_compare_modes_warns_on_few_queries_and_reuses_a_kept_index(
        fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_beir(tmp_path / "mini")
    args = [*flags(tmp_path, fake_ollama), "eval", "--dataset", str(dataset), "--modes", "keyword",
            "--compare", "keyword", "vector", "--keep-index", "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert list(first["results"]) == ["keyword", "vector"]
    assert set(first["per_query"]["keyword"]) == {"q1", "q2", "q3"}
    diff = first["comparisons"]["keyword vs vector"]["ndcg@10"]
    mean_gap = first["results"]["vector"]["ndcg@10"]["mean"] - first["results"]["keyword"]["ndcg@10"]["mean"]
    assert diff["diff"] == pytest.approx(mean_gap)
    assert any("only 3 queries" in n for n in first["notices"])
    embed_calls = len(fake_ollama.calls("/api/embed"))
    assert main(args) == 0
    second = json.loads(capsys.readouterr().out)
    assert any("reused the kept index" in n for n in second["notices"])
    assert len(fake_ollama.calls("/api/embed")) == embed_calls   # neither corpus nor queries embedded again
    assert second["per_query"] == first["per_query"]


def test_a_kept_index_is_not_reused_with_another_embedding_server(
        fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two Ollama servers serving a model of the same name may give different vectors: a kept index (and its
    cached query vectors) made with one is not reused with the other, and each server's is reused with it."""
    dataset = write_beir(tmp_path / "mini")
    other = FakeOllama().start()
    try:
        def run(server: FakeOllama) -> dict[str, Any]:
            assert main([*flags(tmp_path, server), "eval", "--dataset", str(dataset), "--modes", "vector",
                         "--keep-index", "--json"]) == 0
            return json.loads(capsys.readouterr().out)

        run(fake_ollama)
        second = run(other)
        assert not any("reused the kept index" in n for n in second["notices"])
        embedded = [t for call in other.calls("/api/embed") for t in call.body["input"]]
        assert "turbine blade cooling" in embedded and any("Gas turbine blades" in t for t in embedded)
        assert any("reused the kept index" in n for n in run(fake_ollama)["notices"])
        assert any("reused the kept index" in n for n in run(other)["notices"])
        kept = tmp_path / "data" / "eval" / "collections"
        assert len([p for p in kept.iterdir() if p.name.startswith("eval-")]) == 2
    finally:
        other.stop()


def test_eval_compare_runs_pairs_two_saved_reports(fake_ollama: FakeOllama, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_beir(tmp_path / "mini")
    assert main([*flags(tmp_path, fake_ollama), "eval", "--dataset", str(dataset), "--modes", "keyword",
                 "--json"]) == 0
    a = tmp_path / "a.json"
    a.write_text(capsys.readouterr().out)
    b = json.loads(a.read_text())
    b["per_query"]["keyword"]["q1"]["ndcg@10"] = 0.0      # run B lost one query
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert main([*flags(tmp_path, fake_ollama), "eval", "--compare-runs", str(a), str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "keyword: b.json vs a.json" in out and "| -0.333 [" in out
    (tmp_path / "bad.json").write_text("{}")
    assert main([*flags(tmp_path, fake_ollama), "eval", "--compare-runs", str(a), str(tmp_path / "bad.json")]) == 2
    assert "not a saved" in capsys.readouterr().err


def test_eval_sources_scores_what_a_question_would_annotate(fake_ollama: FakeOllama, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """--sources runs the product's retrieval, cuts included: a similarity floor no vector hit reaches leaves a
    vector-mode question nothing to annotate, while the fused ranking (no floor) still finds every document."""
    dataset = write_beir(tmp_path / "mini")
    args = [*flags(tmp_path, fake_ollama), "--set", "retrieve.min_similarity=0.99", "eval", "--dataset",
            str(dataset), "--modes", "vector", "--json"]
    assert main([*args, "--sources"]) == 0
    sources = json.loads(capsys.readouterr().out)
    assert sources["settings"]["scored"].startswith("sources") and sources["settings"]["top_k_per_leg"] == 64
    assert sources["results"]["vector"]["recall@100"]["mean"] == 0.0
    assert main(args) == 0
    ranking = json.loads(capsys.readouterr().out)
    assert ranking["results"]["vector"]["recall@100"]["mean"] == pytest.approx(1.0)


def test_source_ranking_counts_a_documents_repeat_as_not_relevant() -> None:
    from ragtui.evaluation.metrics import per_query
    from ragtui.evaluation.runner import source_ranking
    from ragtui.model.retrieval import Hit
    from tests.collection_builder import make_chunks

    chunks = make_chunks("c", {"d1": ["a", "b"], "d2": ["c"]})
    hits = [Hit(chunk=chunks[0], score=1, rel_score=1, legs=("keyword",)),
            Hit(chunk=chunks[1], score=1, rel_score=1, legs=("keyword",)),
            Hit(chunk=chunks[2], score=1, rel_score=1, legs=("keyword",))]
    ranking = source_ranking(hits)
    assert ranking[0] == "d1" and ranking[2] == "d2" and ranking[1] not in ("d1", "d2")
    assert per_query(ranking, {"d1": 1, "d2": 1})["p@5"] == pytest.approx(2 / 5)


def test_eval_runs_a_strategy_and_reports_its_cost_per_query(fake_ollama: FakeOllama, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A [strategies] option set for the run is what eval measures: here HyDE, whose passage is embedded
    though no query vector was precomputed for it."""
    def passage(body: dict[str, Any]) -> Reply:
        question = str(body["messages"][-1]["content"]).split("Question: ", 1)[1].split("\n", 1)[0]
        return Reply.text(f"In short, {question} is explained here.")

    fake_ollama.responder = passage
    dataset = write_beir(tmp_path / "mini")
    args = [*flags(tmp_path, fake_ollama), "--set", "llm.model=chat", "--set", "strategies.hyde=on", "eval",
            "--dataset", str(dataset), "--modes", "hybrid", "--concurrency", "1"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cost = report["costs"]["hybrid"]
    assert cost["llm_calls"] == 1 and cost["searches"] == 1 and cost["llm_s"] > 0 and cost["seconds"] > 0
    assert report["settings"]["strategies"]["hyde"] == "on"
    assert len(fake_ollama.calls("/api/chat")) == 3 and fake_ollama.max_in_flight == 1
    embedded = json.dumps([c.body["input"] for c in fake_ollama.calls("/api/embed")])
    assert "in short, swept wing drag is explained here." in embedded           # the passage, lowercased
    assert main([*args]) == 0
    assert "cost per query (hybrid): 1.00 model calls, " in capsys.readouterr().out
    assert main([*args[:-2], "--concurrency", "0"]) == 2


def test_eval_with_sentence_window_builds_the_sentence_index_of_a_kept_index(
        fake_ollama: FakeOllama, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kept index made without sentences is reused by a sentence-window run, which adds its sentence index
    (no document embedded again) and searches it: the runs' strategy cost says so."""
    dataset = write_beir(tmp_path / "mini")
    args = ["eval", "--dataset", str(dataset), "--modes", "hybrid", "--keep-index", "--json"]
    assert main([*flags(tmp_path, fake_ollama), *args]) == 0
    plain = json.loads(capsys.readouterr().out)
    embed_calls = len(fake_ollama.calls("/api/embed"))
    assert main([*flags(tmp_path, fake_ollama), "--set", "strategies.sentence_window=2", *args]) == 0
    windowed = json.loads(capsys.readouterr().out)
    assert any("reused the kept index" in n and "built its sentence index" in n for n in windowed["notices"])
    assert not any("no sentence index" in n for n in windowed["notices"])
    assert len(fake_ollama.calls("/api/embed")) == embed_calls
    assert windowed["settings"]["strategies"]["sentence_window"] == 2
    assert plain["per_query"].keys() == windowed["per_query"].keys()
    assert main([*flags(tmp_path, fake_ollama), "--set", "strategies.sentence_window=2", *args]) == 0
    assert any("ingest skipped" in n for n in json.loads(capsys.readouterr().out)["notices"])
