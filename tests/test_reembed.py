"""Vectors that can never be compared with the model's again (a collection embedded when the model gave another
dimension) are named at query time with the way out, `ragtui collections reembed`, which replaces them from the
records; a plain re-ingest says the same instead of reporting "0 embedded". Through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama

DOCS = {
    "valve.txt": "The float valve refills the cistern after each flush until the float rises. " * 4,
    "pump.txt": "A centrifugal pump moves water by spinning an impeller inside its casing. " * 4,
    "roof.txt": "Clay tiles on a pitched roof shed rain into the gutters along the eaves. " * 4,
}
COMMAND = "ragtui collections reembed c --model nomic-embed-text"


def test_reembed_replaces_vectors_of_a_dimension_the_model_no_longer_gives(tmp_path: Path,
                                                                           fake_ollama: FakeOllama) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    model = fake_ollama.models["nomic-embed-text"]
    model.dim = 17                                   # the model as it was when the collection was embedded
    assert cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", "c").returncode == 0
    model.dim = 64                                   # and as it is now

    before = cli(tmp_path, fake_ollama.url, "query", "float valve cistern", "-c", "c", "--json")
    assert before.returncode == 0, before.stderr
    result = json.loads(before.stdout)
    assert result["keyword_only"]
    assert any(COMMAND in n for n in result["notices"]), result["notices"]

    (docs / "lamp.txt").write_text("An oil lamp burns paraffin drawn up through a cotton wick. " * 4)
    again = cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", "c")
    assert again.returncode == 0, again.stderr
    assert "17-dimension" in again.stderr and "gives 64" in again.stderr and COMMAND in again.stderr

    reembedded = cli(tmp_path, fake_ollama.url, "collections", "reembed", "c", "--model", "nomic-embed-text")
    assert reembedded.returncode == 0, reembedded.stderr
    assert "Traceback" not in reembedded.stderr and "warning" not in reembedded.stderr

    after = cli(tmp_path, fake_ollama.url, "query", "float valve cistern", "-c", "c", "--json")
    fixed = json.loads(after.stdout)
    assert not fixed["keyword_only"] and fixed["notices"] == []
    assert fixed["nodes"][0]["source"] == "valve.txt" and "vector" in fixed["nodes"][0]["legs"]
    assert fixed["retrieval_meta"]["collections"]["c"]["vector"]["vectors"] == {"nomic-embed-text": len(DOCS) + 1}
    listed = json.loads(cli(tmp_path, fake_ollama.url, "collections", "list", "--json").stdout)
    assert listed[0]["state"] == "ready"
