"""`ragtui ingest FOLDER -c NAME --watch`: a real process watching a real folder picks up an added, a changed and a
removed file within seconds, through the same ingest `ragtui ingest --sync` runs; Ctrl-C stops it with a summary,
and a second watch of the same collection is refused while the first holds it."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.cli_run import cli
from tests.fake_ollama import FakeOllama
from tests.watch_process import WatchProcess

PICKED_UP_S = 10        # a change's ingest reported within this long (watchfiles gathers a burst for 1.6 s at most)
VALVE = "The float valve refills the cistern after each flush."
STARTED_S = 120         # a fresh interpreter's start and the first ingest, on a loaded machine


@contextmanager
def watching(tmp_path: Path, fake_ollama: FakeOllama, files: dict[str, str], *,
             started: bool = True) -> Iterator[tuple[Path, WatchProcess]]:
    """A docs folder holding `files` under a real `ingest --watch` into collection w (its start awaited unless
    `started` is False), killed at the end whatever happened."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in files.items():
        (docs / name).write_text(text)
    watch = WatchProcess(tmp_path, fake_ollama.url, docs, "w")
    try:
        if started:
            watch.wait_for(lambda line: line.startswith("watch: watching"), STARTED_S)
        yield docs, watch
    finally:
        watch.kill()


def texts(tmp_path: Path, fake_ollama: FakeOllama) -> dict[str, str]:
    """Source -> chunk text of every chunk `ragtui query` finds in collection w (vectors, no similarity floor: all
    of them, in a collection this small)."""
    run = cli(tmp_path, fake_ollama.url, "--set", "retrieve.min_similarity=0", "query", "pump valve", "-c", "w",
              "--json", "--mode", "vector")
    assert run.returncode == 0, run.stderr
    return {n["source"]: n["text"] for n in json.loads(run.stdout)["nodes"]}


def collection(tmp_path: Path, fake_ollama: FakeOllama) -> dict[str, object]:
    run = cli(tmp_path, fake_ollama.url, "collections", "list", "--json")
    assert run.returncode == 0, run.stderr
    [info] = json.loads(run.stdout)
    return dict(info)


def test_watch_picks_up_an_added_a_changed_and_a_removed_file_then_stops_on_ctrl_c(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    with watching(tmp_path, fake_ollama, {"a.txt": VALVE}, started=False) as (docs, watch):
        watch.wait_for(lambda line: line.startswith("collection w: 1 added"), STARTED_S)
        watch.wait_for(lambda line: line.startswith("watch: watching"), 10)
        assert collection(tmp_path, fake_ollama)["watched"] is True

        (docs / "b.txt").write_text("A centrifugal pump spins an impeller inside its casing.")
        started = time.monotonic()
        watch.wait_for(lambda line: line.startswith("collection w: 1 added, 0 updated, 1 unchanged"), PICKED_UP_S)
        assert time.monotonic() - started < PICKED_UP_S
        assert texts(tmp_path, fake_ollama) == {"a.txt": VALVE,
                                                "b.txt": "A centrifugal pump spins an impeller inside its casing."}

        (docs / "a.txt").write_text("The flapper seal leaks when the chain is too short.")
        watch.wait_for(lambda line: line.startswith("collection w: 0 added, 1 updated, 1 unchanged"), PICKED_UP_S)
        assert texts(tmp_path, fake_ollama)["a.txt"] == "The flapper seal leaks when the chain is too short."

        (docs / "b.txt").unlink()
        watch.wait_for(lambda line: line.startswith("collection w: 0 added, 0 updated, 1 unchanged, 1 removed"),
                       PICKED_UP_S)
        assert set(texts(tmp_path, fake_ollama)) == {"a.txt"}
        assert collection(tmp_path, fake_ollama)["files"] == 1

        status, rest = watch.interrupt()
        assert status == 0, watch.stderr_if_ended()
        assert "watch: stopped; 4 finished ingest run(s) into 'w': 2 file(s) added, 1 changed, 1 removed" in rest
        info = collection(tmp_path, fake_ollama)
        assert info["watched"] is False and info["state"] == "ready"


def test_a_second_watch_of_the_same_collection_is_refused_and_a_file_is_not_a_folder(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(VALVE)
    first = WatchProcess(tmp_path, fake_ollama.url, docs, "w")
    try:
        first.wait_for(lambda line: line.startswith("watch: watching"), STARTED_S)
        second = cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", "w", "--watch", timeout=60)
        assert second.returncode == 1
        assert "another `ingest --watch` is keeping collection 'w' in step with its folder" in second.stderr
        assert first.proc.poll() is None                 # the first goes on
    finally:
        first.kill()
    run = cli(tmp_path, fake_ollama.url, "ingest", str(docs / "a.txt"), "-c", "w", "--watch", timeout=60)
    assert run.returncode == 2 and "--watch keeps a collection in step with folders; not a folder" in run.stderr
    run = cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", "w", "--watch", "--json", timeout=60)
    assert run.returncode == 2 and "--watch goes on ingesting: pass one of them" in run.stderr


def test_a_watched_folder_removed_ends_the_watch_with_one_line(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    with watching(tmp_path, fake_ollama, {"a.txt": VALVE}) as (docs, watch):
        shutil.rmtree(docs)
        assert watch.proc.wait(timeout=60) == 1
        assert watch.wait_for(lambda line: line.startswith("watch: stopped"), 10).endswith("0 removed")
        assert watch.stderr_if_ended().splitlines()[-1] == (
            f"ragtui: watched folder gone: {docs}; the watch stops (the collection keeps its files: `ingest --sync` "
            "drops them)")
        assert collection(tmp_path, fake_ollama)["files"] == 1


def test_ctrl_c_during_a_run_interrupts_it_and_the_next_ingest_finishes_it(tmp_path: Path,
                                                                          fake_ollama: FakeOllama) -> None:
    with watching(tmp_path, fake_ollama, {"a.txt": VALVE}) as (docs, watch):
        fake_ollama.embed_delay = 30                     # the next run waits on its embedding
        embedded = len(fake_ollama.calls("/api/embed"))
        (docs / "b.txt").write_text("A centrifugal pump spins an impeller inside its casing.")
        watch.wait_for(lambda line: line.startswith("watch: 1 change(s)"), PICKED_UP_S)
        deadline = time.monotonic() + 20
        while len(fake_ollama.calls("/api/embed")) == embedded and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(fake_ollama.calls("/api/embed")) > embedded       # the run is waiting on b.txt's vector
        status, rest = watch.interrupt()
        assert status == 0, watch.stderr_if_ended()
        assert rest.endswith("1 finished ingest run(s) into 'w': 1 file(s) added, 0 changed, 0 removed; the run "
                             "under way was interrupted (the stores are consistent: the next ingest or watch "
                             "finishes it)")
        assert collection(tmp_path, fake_ollama)["state"] == "interrupted"
    fake_ollama.embed_delay = 0
    again = cli(tmp_path, fake_ollama.url, "ingest", str(docs), "-c", "w")
    assert again.returncode == 0, again.stderr
    info = collection(tmp_path, fake_ollama)
    assert info["state"] == "ready" and info["files"] == 2


def test_a_watched_change_re_checks_the_sessions_that_cite_the_file(tmp_path: Path,
                                                                    fake_ollama: FakeOllama) -> None:
    from tests.test_citation_recheck import PUMPS, QUESTION, QUOTE, _quoting

    fake_ollama.responder = _quoting
    with watching(tmp_path, fake_ollama, {"pumps.txt": PUMPS}) as (docs, watch):
        asked = cli(tmp_path, fake_ollama.url, "ask", "-c", "w", "--json", QUESTION)
        assert asked.returncode == 0, asked.stderr
        assert f'"{QUOTE}"' in json.loads(asked.stdout)["answer"]

        (docs / "pumps.txt").write_text("Centrifugal pumps start once the casing is full.")
        line = watch.wait_for(lambda line: line.startswith("history: "), PICKED_UP_S)
        assert line.startswith("history: re-checked 1 session citing a changed or removed file: 1 stale citation")
        status, _ = watch.interrupt()
        assert status == 0, watch.stderr_if_ended()
    verified = cli(tmp_path, fake_ollama.url, "history", "verify", "--all", "--json")
    assert verified.returncode == 3, verified.stderr
    assert "changed" in verified.stdout
