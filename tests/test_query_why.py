"""`ragtui query "..." --why PATH[:PAGE]`: for a file the user expected, what happened to it in each leg and step,
one crafted miss per cause, through the real CLI against the fake Ollama."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama
from tests.ingest.corpus import pdf

DOCS = {
    "pump.txt": "A centrifugal pump moves water by spinning an impeller inside its casing.",
    "roof.txt": "Clay tiles on a pitched roof shed rain into the gutters along the eaves.",
    "shed.txt": "The garden shed has a felt roof over its pitched frame of timber.",
    "contents.txt": "Contents\nPumps and impellers ........ 12\nValves and seals ........ 30\n"
                    "Roof tiles and gutters ........ 45\nIndex ........ 60\n",
    "bread.txt": "Bread dough rises when yeast ferments the sugars in the flour.",
    "chess.txt": "A chess knight moves in an L shape and may jump over other pieces.",
    "violin.txt": "A violin bow strung with horsehair is drawn across the strings.",
    "tide.txt": "Tides follow the pull of the moon on the oceans twice a day.",
}
MANUAL = ["The pump gasket seals the pump casing. Replace the pump gasket when the pump casing leaks. " * 3,
          "Bolts hold the cover plate. Tighten each bolt in a star pattern to an even torque. " * 3,
          "A pump gasket may also be cut from sheet material when no spare is at hand. " * 3]
SMALL_CHUNKS = ("--set", "chunk.size_tokens=48")


@pytest.fixture(scope="module")
def ollama() -> Iterator[FakeOllama]:
    server = FakeOllama().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, ollama: FakeOllama) -> Path:
    """Collection `m` (embedded) with the documents and a three-page manual; `bare`, ingested while Ollama was
    unreachable (no vectors)."""
    root = tmp_path_factory.mktemp("why")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    pdf(docs / "manual.pdf", MANUAL)
    done = cli(root, ollama.url, *SMALL_CHUNKS, "ingest", str(docs), "-c", "m")
    assert done.returncode == 0, done.stderr
    bare = root / "bare"
    bare.mkdir()
    for name in ("pump.txt", "bread.txt", "chess.txt", "violin.txt", "tide.txt"):
        (bare / name).write_text(DOCS[name])
    cli(root, "http://127.0.0.1:9", "ingest", str(bare), "-c", "bare")
    return root


def why(home: Path, ollama: FakeOllama, query: str, target: str, *flags: str, collection: str = "m") -> str:
    done = cli(home, ollama.url, *flags, "query", query, "-c", collection, "--why", target)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\nWhy ", 1)[1]


def test_a_file_the_legs_found_and_the_pipeline_returned(home: Path, ollama: FakeOllama) -> None:
    out = why(home, ollama, "centrifugal pump impeller", "pump.txt")
    assert out.startswith("m/pump.txt: returned as source #1")
    assert "vector leg: similarity" in out and "rank 1" in out


def test_below_the_similarity_floor(home: Path, ollama: FakeOllama) -> None:
    out = why(home, ollama, "centrifugal pump impeller", str(home / "docs" / "roof.txt"))   # the path as typed
    assert out.startswith("m/roof.txt: only the vector leg found it, below retrieve.min_similarity = 0.25")
    assert ", below it)" in out and "keyword leg: tier" in out and "score" not in out.split("keyword leg:")[1]


def test_below_the_quality_floors(home: Path, ollama: FakeOllama) -> None:
    out = why(home, ollama, "centrifugal pump impeller", "pump.txt", "--set", "retrieve.min_vector_score=0.99")
    assert out.startswith("m/pump.txt: below the quality floors (retrieve.min_token_overlap = 0, "
                          "retrieve.min_vector_score = 0.99)"), out


def test_the_words_a_chunk_holds_and_lacks(home: Path, ollama: FakeOllama) -> None:
    out = why(home, ollama, "impeller casing gasket", "pump.txt")
    assert "the chunk holds: impeller, casing; lacks: gasket" in out


def test_beyond_each_legs_top_k(home: Path, ollama: FakeOllama) -> None:
    out = why(home, ollama, "pitched roof tiles gutters eaves", "shed.txt", "--set", "retrieve.top_k=1")
    assert out.startswith("m/shed.txt: no leg found it among its top 1 (retrieve.top_k)")
    assert "keyword leg: tier" in out and "rank 2" in out


def test_cut_by_the_per_file_cap(home: Path, ollama: FakeOllama) -> None:
    flat = ("--set", "retrieve.per_file_cap=flat", "--set", "retrieve.max_chunks_per_file=1")
    out = why(home, ollama, "pump gasket", "manual.pdf:iii", *flat)
    assert out.startswith("m/manual.pdf p.iii: the per-file cap"), out
    assert "(p.iii)" in out
    whole = why(home, ollama, "pump gasket", "manual.pdf", *flat)
    assert whole.startswith("m/manual.pdf: returned as source #")


def test_filtered_at_ingest(home: Path, ollama: FakeOllama) -> None:
    out = why(home, ollama, "pumps valves roof tiles", "contents.txt")
    assert out.startswith("m/contents.txt: no chunk of it was indexed")
    assert "dropped by the ingest filters (whole file): table of contents or index 1" in out
    assert "vectors" not in out          # no chunk, so nothing to say about its vectors


def test_without_vectors(home: Path, ollama: FakeOllama) -> None:
    out = why(home, ollama, "centrifugal pump impeller", "pump.txt", collection="bare")
    assert out.startswith("bare/pump.txt: returned as source #1")
    assert "  vectors: the collection has none (its ingest could not embed" in out
    assert "  vector leg: none (no vectors in this collection)" in out


def test_a_file_no_collection_has_is_one_error_line(home: Path, ollama: FakeOllama) -> None:
    done = cli(home, ollama.url, "query", "pump", "-c", "m", "--why", "nope.txt")
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "no file 'nope.txt' in m: it was never ingested there" in done.stderr


def test_why_with_a_filter_is_a_usage_error(home: Path, ollama: FakeOllama) -> None:
    """The replay searches without filters, so a filtered --why would explain another search than the one asked."""
    done = cli(home, ollama.url, "query", "pump", "-c", "m", "-f", "path:*.pdf", "--why", "pump.txt")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "leave out -f/--filter" in done.stderr
