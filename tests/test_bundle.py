"""`ragtui history bundle` and `ragtui verify` through the real CLI: a bundle written from a session answered over
the fake Ollama verifies offline (its collection, history and server gone); each kind of edit fails with the
field named; a changed or removed source document is reported with --against; a hostile file is one clear
error."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ragtui.config import Settings
from tests.cli_run import ROOT, run_ragtui
from tests.fake_ollama import FakeOllama
from tests.model_habits import as_reply, misattributes_quotes
from tests.test_answer_numbers_and_attribution import AREA, QUESTION, SURVEY
from tests.test_quotes import _cli

SCHEMA = ROOT / "ragtui" / "bundle" / "schema.json"


def _session(tmp_path: Path, settings: Settings, fake_ollama: FakeOllama) -> int:
    """A saved session whose answer quotes each document and cites the other one (every quote misattributed,
    and the percentage it quotes not in the source cited)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "survey.md").write_text(SURVEY + "\n")
    (docs / "area.md").write_text(AREA + "\n")
    assert _cli(settings, "ingest", str(docs), "-c", "farms").returncode == 0
    fake_ollama.responder = as_reply(misattributes_quotes)
    asked = _cli(settings, "ask", "-c", "farms", "--json", QUESTION)
    assert asked.returncode == 0, asked.stderr
    return int(json.loads(asked.stdout)["session"])


def _bundle(settings: Settings, session: int, out: Path) -> dict[str, Any]:
    done = _cli(settings, "history", "bundle", str(session), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert f"wrote session {session} as a bundle to {out}; `ragtui verify {out}` checks it" in done.stdout
    return dict(json.loads(out.read_text()))


@pytest.fixture
def bundled(tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> Path:
    """The bundle of `_session`, written by `history bundle`, with the data dir (collection and history)
    deleted after."""
    settings = make_settings()
    out = tmp_path / "session.bundle.json"
    _bundle(settings, _session(tmp_path, settings, fake_ollama), out)
    shutil.rmtree(settings.data_dir)
    return out


def _verify(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`ragtui verify ARGS` with an empty data dir and no server: offline."""
    return run_ragtui([sys.executable, "-m", "ragtui", "--config", os.devnull, "--data-dir", str(tmp_path / "none"),
                       "--ollama-host", "http://127.0.0.1:9", "verify", *args],
                      {**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)


def _edited(path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads(path.read_text())
    edit(data)
    out = path.with_name("edited.json")
    out.write_text(json.dumps(data))
    return out


def _source(data: dict[str, Any], document: str) -> dict[str, Any]:
    return next(s for s in data["content"]["turns"][0]["sources"] if s["document"] == document)


def _index(data: dict[str, Any], document: str) -> int:
    return data["content"]["turns"][0]["sources"].index(_source(data, document))


def test_a_bundle_holds_the_session_and_verifies_offline(bundled: Path, tmp_path: Path) -> None:
    data = json.loads(bundled.read_text())
    assert (data["format"], data["version"]) == ("ragtui-session-bundle", 1)
    turn = data["content"]["turns"][0]
    assert turn["question"] == QUESTION and '"The survey found that 85% of"' in turn["answer"]
    survey = _source(data, "survey.md")
    assert survey["text"].startswith(SURVEY.splitlines()[0])
    assert survey["document_sha256"] == hashlib.sha256((SURVEY + "\n").encode()).hexdigest()
    assert survey["document_hashed"] == "file" and survey["collection"] == "farms"
    assert survey["text_sha256"] == hashlib.sha256(survey["text"].encode()).hexdigest()
    assert survey["verdict"] == "relevant" and survey["override"] == "" and survey["used"] is True
    assert data["content"]["models"]["synthesis"] == "chat" and data["content"]["settings"]["llm.model"] == "chat"
    checks = turn["checks"]
    assert {q["state"] for q in checks["quotes"]} == {"misattributed"} and len(checks["quotes"]) == 2
    assert [n["stated"] for n in checks["numbers"]] == ["85%", "1,500,000"]
    assert (checks["echo"], checks["non_answer"], checks["uncited"]) == (False, False, False)
    Draft202012Validator(json.loads(SCHEMA.read_text())).validate(data)

    done = _verify(tmp_path, str(bundled))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 quotes checked (2 misattributed), 2 numbers flagged" in done.stdout
    assert done.stdout.rstrip().endswith("verified: every hash and every check holds")
    report = json.loads(_verify(tmp_path, str(bundled), "--json").stdout)
    assert (report["ok"], report["failures"]) == (True, [])


def test_an_override_is_recorded_and_an_unknown_document_hash_is_said(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    session = _session(tmp_path, settings, fake_ollama)
    assert _cli(settings, "history", "drop", str(session), "1").returncode == 0
    # chunks saved without their document's hash: the collection's records give it while they hold the chunk
    with sqlite3.connect(settings.data_dir / "history.sqlite3") as db:
        for number, meta in db.execute("SELECT number, chunk_meta FROM sources").fetchall():
            db.execute("UPDATE sources SET chunk_meta = ? WHERE number = ?",
                       (json.dumps({**json.loads(meta), "file_hash": ""}), number))
    docs = tmp_path / "docs"
    hashes = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in docs.iterdir()}
    recorded = _bundle(settings, session, tmp_path / "recorded.json")
    sources = recorded["content"]["turns"][0]["sources"]
    assert {s["document"]: (s["document_sha256"], s["document_hashed"]) for s in sources} == \
        {name: (digest, "file") for name, digest in hashes.items()}
    first = next(s for s in sources if s["number"] == 1)
    assert (first["verdict"], first["override"], first["used"]) == ("relevant", "dropped", False)

    assert _cli(settings, "collections", "delete", "farms", "--yes").returncode == 0
    unknown = tmp_path / "unknown.json"
    sources = _bundle(settings, session, unknown)["content"]["turns"][0]["sources"]
    assert {(s["document_sha256"], s["document_hashed"]) for s in sources} == {(None, "unknown")}
    done = _verify(tmp_path, str(unknown), "--against", str(docs))
    assert done.returncode == 0, done.stdout
    assert f"farms/survey.md: its sha256 then is unknown (now {hashes['survey.md'][:12]}); 3 of 3 cited passages " \
           "still in it" in done.stdout

    def used_again(data: dict[str, Any]) -> None:
        next(s for s in data["content"]["turns"][0]["sources"] if s["number"] == 1)["used"] = True

    done = _verify(tmp_path, str(_edited(unknown, used_again)))
    assert "(its verdict is relevant, with the override dropped): a verdict or its use changed without an " \
           "override record" in done.stdout


def _edit_quote(data: dict[str, Any]) -> None:
    data["content"]["turns"][0]["checks"]["quotes"][0]["quote"] = "The survey found that 95% of"


def _edit_answer(data: dict[str, Any]) -> None:
    turn = data["content"]["turns"][0]
    turn["answer"] = turn["answer"].replace("Source", "The source")


def _edit_text(data: dict[str, Any]) -> None:
    source = _source(data, "survey.md")
    source["text"] = source["text"].replace("85%", "95%")


def _edit_verdict(data: dict[str, Any]) -> None:
    _source(data, "area.md")["verdict"] = "irrelevant"


def _area(data: dict[str, Any], field: str) -> str:
    return f"$.content.turns[0].sources[{_index(data, 'area.md')}].{field}"


def _survey(data: dict[str, Any], field: str) -> str:
    return f"$.content.turns[0].sources[{_index(data, 'survey.md')}].{field}"


@pytest.mark.parametrize(("edit", "named"), [
    (_edit_quote, lambda d: ["$.content.turns[0].checks.quotes[0].quote"]),
    (_edit_answer, lambda d: ["$.content.turns[0].answer"]),
    (_edit_text, lambda d: [_survey(d, "text")]),
    (_edit_verdict, lambda d: [_area(d, "verdict"), _area(d, "used")]),
], ids=["quote", "answer", "chunk text", "verdict"])
def test_an_edited_bundle_fails_with_the_field_named(bundled: Path, tmp_path: Path,
                                                     edit: Callable[[dict[str, Any]], None],
                                                     named: Callable[[dict[str, Any]], list[str]]) -> None:
    edited = _edited(bundled, edit)
    done = _verify(tmp_path, str(edited))
    assert done.returncode == 1, done.stdout + done.stderr
    failed = [line.split(": ", 1)[0].removeprefix("FAIL ") for line in done.stdout.splitlines()
              if line.startswith("FAIL ")]
    for path in named(json.loads(bundled.read_text())):
        assert path in failed, done.stdout
    assert done.stdout.rstrip().endswith(f"{len(failed)} failure{'s' if len(failed) > 1 else ''}")
    report = json.loads(_verify(tmp_path, str(edited), "--json").stdout)
    assert not report["ok"] and [f["path"] for f in report["failures"]] == failed


def test_a_changed_verdict_is_named_as_one_without_an_override_record(bundled: Path, tmp_path: Path) -> None:
    done = _verify(tmp_path, str(_edited(bundled, _edit_verdict)))
    used_path = _area(json.loads(bundled.read_text()), "used")
    used = next(line for line in done.stdout.splitlines() if line.startswith(f"FAIL {used_path}:"))
    assert "the bundle says true, recomputed from the bundle: false" in used
    assert "changed without an override record" in used


def test_an_edit_with_its_hashes_rewritten_is_still_caught_by_the_checks(bundled: Path, tmp_path: Path) -> None:
    """A forger who rewrites the hashes passes the integrity check (the docs say so), but a changed chunk text
    still changes what the quote check finds there."""
    from ragtui.bundle.integrity import record, sha256_text

    def forge(data: dict[str, Any]) -> None:
        _edit_text(data)
        survey = _source(data, "survey.md")
        survey["text_sha256"] = sha256_text(survey["text"])
        data["integrity"] = record(data["content"])

    done = _verify(tmp_path, str(_edited(bundled, forge)))
    assert done.returncode == 1
    failed = {line.split(": ", 1)[0].removeprefix("FAIL ") for line in done.stdout.splitlines()
              if line.startswith("FAIL ")}
    data = json.loads(bundled.read_text())
    # the quote no longer found in its source, and the annotation's quote of it now a misquote; no hash fails
    assert failed == {"$.content.turns[0].checks.quotes[0].found_in", "$.content.turns[0].checks.quotes[0].state",
                      "$.content.turns[0].checks.quotes[0].verdict", _survey(data, "misquoted")}, done.stdout


def test_documents_as_they_are_now(bundled: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    same = _verify(tmp_path, str(bundled), "--against", str(docs))
    assert same.returncode == 0, same.stdout + same.stderr
    assert "farms/survey.md: unchanged; 3 of 3 cited passages still in it" in same.stdout
    assert same.stdout.rstrip().endswith("verified: every hash and every check holds, and every cited passage of "
                                         "the 2 documents compared is still in it")
    one = _verify(tmp_path, str(bundled), "--against", str(docs / "survey.md"))
    assert one.returncode == 0 and one.stdout.rstrip().endswith(
        "every cited passage of the 1 document compared is still in it (1 not compared)"), one.stdout

    (docs / "area.md").write_text(AREA + "\nA line added later.\n")          # changed, every passage still there
    (docs / "survey.md").write_text(SURVEY.replace("85%", "80%") + "\n")     # the quoted figure changed
    changed = _verify(tmp_path, str(bundled), "--against", str(docs))
    assert changed.returncode == 1
    data = json.loads(bundled.read_text())
    assert "farms/area.md: changed since the session (sha256 was" in changed.stdout
    assert any(line.startswith("farms/survey.md: changed since the session") and "0 of 3 cited passages" in line
               for line in changed.stdout.splitlines()), changed.stdout
    failed = {line.split(": ", 1)[0].removeprefix("FAIL ") for line in changed.stdout.splitlines()
              if line.startswith("FAIL ")}
    assert failed == {_survey(data, "text"), _survey(data, "annotation"), "$.content.turns[0].checks.quotes[0].quote"}

    (docs / "area.md").unlink()
    gone = json.loads(_verify(tmp_path, str(bundled), "--against", str(docs), "--json").stdout)
    assert {d["document"]: d["state"] for d in gone["documents"]} == {"survey.md": "changed", "area.md": "gone"}
    assert {"path": _area(data, "document"), "reason": f"farms/area.md is not in {docs}"} in gone["failures"]

    one = _verify(tmp_path, str(bundled), "--against", str(docs / "survey.md"))
    assert "farms/area.md: not checked (not the file given)" in one.stdout and one.returncode == 1


def test_a_bundle_checked_against_the_collections_as_they_are_now(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    out = tmp_path / "session.bundle.json"
    _bundle(settings, _session(tmp_path, settings, fake_ollama), out)
    same = _cli(settings, "verify", str(out), "--collections")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "collections: 2 citations checked, 2 current, 0 moved" in same.stdout

    docs = tmp_path / "docs"
    (docs / "survey.md").write_text(SURVEY.replace("85%", "80%") + "\n")     # the quoted figure changed
    (docs / "area.md").unlink()
    assert _cli(settings, "ingest", str(docs), "-c", "farms", "--sync").returncode == 0
    now = _cli(settings, "verify", str(out), "--collections", "--json")
    assert now.returncode == 1, now.stdout + now.stderr
    states = {c["cited"].split(" ")[0]: c["state"] for c in json.loads(now.stdout)["citations"]}
    assert states == {"farms/survey.md": "changed", "farms/area.md": "gone"}
    failures = [f["reason"] for f in json.loads(now.stdout)["failures"]]
    assert any("gone: the file is no longer in the collection" in r for r in failures), failures
    paths = {f["path"] for f in json.loads(now.stdout)["failures"]}
    assert paths == {f"$.content.turns[0].sources[{i}]" for i in range(2)}, paths


def test_a_pdf_session_holds_its_pages_and_verifies_against_the_pdf(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    """A PDF's chunks carry their page range into the bundle, and --against extracts the PDF as the ingest did:
    every cited passage (the chunk texts and the annotation's quote) is found in it again."""
    from tests.ingest.test_page_ranges import QUOTE, quoting_responder, write_pdf

    settings = make_settings("retrieve.min_similarity=0")
    papers = tmp_path / "papers"
    papers.mkdir()
    write_pdf(papers / "cooling.pdf")
    assert _cli(settings, "ingest", str(papers), "-c", "papers").returncode == 0
    fake_ollama.responder = quoting_responder
    asked = _cli(settings, "ask", "-c", "papers", "--json", "How is the blade kept cool?")
    assert asked.returncode == 0, asked.stderr
    out = tmp_path / "pdf.json"
    data = _bundle(settings, int(json.loads(asked.stdout)["session"]), out)
    sources = data["content"]["turns"][0]["sources"]
    assert {(s["document"], s["format"]) for s in sources} == {("cooling.pdf", "pdf")}
    assert "12-13" in {s["pages"] for s in sources} and any(QUOTE in s["annotation"] for s in sources)
    done = _verify(tmp_path, str(out), "--against", str(papers), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    [document] = json.loads(done.stdout)["documents"]
    assert (document["state"], document["missing"]) == ("unchanged", [])
    assert document["passages"] > len(sources)          # each chunk's text, and at least one annotation's quote
    # against the collection it came from, unchanged: every citation current, the chunk over pages 12-13 too
    here = _cli(settings, "verify", str(out), "--collections", "--json")
    assert here.returncode == 0, here.stdout + here.stderr
    assert {c["state"] for c in json.loads(here.stdout)["citations"]} == {"current"}


def test_an_archive_member_is_hashed_by_its_text_and_found_in_its_archive(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    docs = tmp_path / "docs"
    docs.mkdir()
    with zipfile.ZipFile(docs / "farms.zip", "w") as archive:
        archive.writestr("survey.md", SURVEY + "\n")
        archive.writestr("area.md", AREA + "\n")
    assert _cli(settings, "ingest", str(docs), "-c", "farms").returncode == 0
    fake_ollama.responder = as_reply(misattributes_quotes)
    asked = _cli(settings, "ask", "-c", "farms", "--json", QUESTION)
    out = tmp_path / "zip.json"
    sources = _bundle(settings, int(json.loads(asked.stdout)["session"]), out)["content"]["turns"][0]["sources"]
    survey = next(s for s in sources if s["document"] == "farms.zip/survey.md")
    assert survey["document_hashed"] == "text"
    assert survey["document_sha256"] == hashlib.sha256((SURVEY + "\n").encode()).hexdigest()
    done = _verify(tmp_path, str(out), "--against", str(docs))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "farms/farms.zip/survey.md: unchanged; 3 of 3 cited passages still in it" in done.stdout
    one = _verify(tmp_path, str(out), "--against", str(docs / "farms.zip"))      # the archive given as one file
    assert one.returncode == 0 and "farms/farms.zip/area.md: unchanged" in one.stdout, one.stdout + one.stderr


@pytest.mark.parametrize(("body", "says"), [
    ("not json", "is not JSON"),
    ("[" * 5000 + "]" * 5000, "nested too deep"),
    ("[" * 30 + "]" * 30, "nested deeper than a bundle"),
    ('{"format": "ragtui-session-bundle", "version": 2}', "format version 2; this ragtui reads version 1"),
    ('{"format": "something else"}', "is not a ragtui session bundle: its $.format is not 'ragtui-session-bundle'"),
    ('{"format": "ragtui-session-bundle", "version": 1}', "is a required property"),
], ids=["not json", "too deep for the parser", "too deep", "newer", "not a bundle", "incomplete"])
def test_a_file_that_is_no_bundle_is_one_clear_error(tmp_path: Path, body: str, says: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(body)
    done = _verify(tmp_path, str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("ragtui: ") and len(done.stderr.splitlines()) == 1 and says in done.stderr, \
        done.stderr


def test_a_wrong_type_is_named_by_its_path_and_control_sequences_stay_inert(bundled: Path, tmp_path: Path) -> None:
    def wrong(data: dict[str, Any]) -> None:
        data["content"]["turns"][0]["answer"] = 5

    done = _verify(tmp_path, str(_edited(bundled, wrong)))
    assert done.returncode == 2
    assert "is not a valid bundle: $.content.turns[0].answer: 5 is not of type 'string'" in done.stderr

    def hostile(data: dict[str, Any]) -> None:
        _source(data, "survey.md")["document"] = "\x1b]52;c;cHduZWQ=\x07survey\x1b[2J.md"
        _source(data, "area.md")["document"] = "a" * 5000 + ".md"          # longer than any file name may be

    done = _verify(tmp_path, str(_edited(bundled, hostile)), "--against", str(tmp_path / "docs"))
    assert done.returncode == 1
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout
    assert "\\x1b]52" in done.stdout
    assert "cannot be looked up under" in done.stdout and "File name too long" in done.stdout


def _leaves(node: Any) -> list[tuple[Any, Any]]:
    """(container, key) of every string, number, boolean and null in `node`."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    return [leaf for key, value in items
            for leaf in (_leaves(value) if isinstance(value, dict | list) and value else [(node, key)])]


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                           max_leaves=6)


@hypothesis.settings(max_examples=60, suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(data=st.data())
def test_any_field_replaced_by_any_value_is_a_failure_or_one_error_never_a_crash(
        bundled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    from ragtui.cli import main

    bundle = json.loads(bundled.read_text())
    leaves = _leaves(bundle)
    container, key = leaves[data.draw(st.integers(0, len(leaves) - 1), label="field")]
    container[key] = data.draw(JSON_VALUES, label="value")
    edited = tmp_path / "fuzzed.json"
    edited.write_text(json.dumps(bundle))
    capsys.readouterr()
    against = ["--against", str(tmp_path / "docs")] if data.draw(st.booleans(), label="against") else []
    code = main(["--config", os.devnull, "--data-dir", str(tmp_path / "none"), "verify", str(edited), *against])
    out, err = capsys.readouterr()
    assert code in (0, 1, 2)
    assert "\x1b" not in out + err and "Traceback" not in err
    assert code == 0 or (code == 1 and "FAIL $." in out) or (code == 2 and len(err.splitlines()) == 1), (out, err)


def test_a_bundle_over_the_size_cap_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as file:
        file.truncate(32 * 2**20 + 1)
    done = _verify(tmp_path, str(path))
    assert done.returncode == 2 and "more than the 32768 KiB a bundle may hold" in done.stderr


def test_a_bundle_built_to_keep_verify_busy_is_refused(tmp_path: Path) -> None:
    """600 sources and an answer of 200 cited quotes, each quote to be looked up in every source: valid under the
    schema, and refused before any check runs (it took minutes)."""
    from ragtui.bundle.integrity import record, sha256_text

    text = "lorem ipsum dolor sit amet " * 30
    source = {"number": 1, "collection": "c", "document": "d.md", "document_sha256": None,
              "document_hashed": "unknown", "format": "md", "page": "", "pages": "", "page_breaks": "", "heading": "",
              "chunk_id": "x",
              "chunk_index": 0, "char_start": 0, "char_end": len(text), "lead": 0, "text": text,
              "text_sha256": sha256_text(text), "verdict": "relevant", "override": "", "annotation": "",
              "annotated_by": "", "annotation_prompt": "", "used": True, "misquoted": []}
    turn = {"question": "q", "rewrite": "", "rewrite_by": "", "stop_reason": "stop", "continuations": 0,
            "answer": " ".join(f'It says "alpha beta gamma{q}" [1].' for q in range(200)), "prompt": [],
            "prompt_sources": [1], "citations": [1], "unknown_citations": [],
            "sources": [{**source, "number": n} for n in range(1, 601)],
            "checks": {"quotes": [], "numbers": [], "echo": False, "non_answer": False, "uncited": False}}
    content = {"session": {"id": 1, "created_at": "", "updated_at": "", "collections": ["c"]},
               "models": {"synthesis": "m", "annotation": "m", "annotation_on": True}, "settings": {}, "research": None,
               "turns": [turn]}
    path = tmp_path / "busy.json"
    path.write_text(json.dumps({"format": "ragtui-session-bundle", "version": 1, "written_by": "", "written_at": "",
                                "content": content, "integrity": record(content)}))
    done = _verify(tmp_path, str(path))
    assert done.returncode == 2 and "asks for more checking than verify does" in done.stderr, done.stderr


def test_the_schema_is_a_json_schema_that_describes_every_field() -> None:
    schema = json.loads(SCHEMA.read_text())
    Draft202012Validator.check_schema(schema)

    def objects(node: Any) -> list[dict[str, Any]]:
        if isinstance(node, dict):
            found = [node] if node.get("type") == "object" and "properties" in node else []
            return found + [o for value in node.values() for o in objects(value)]
        return [o for value in node for o in objects(value)] if isinstance(node, list) else []

    for node in objects(schema):
        assert node["additionalProperties"] is False and set(node["required"]) == set(node["properties"])


def test_a_long_honest_session_is_within_the_work_a_bundle_may_ask_for() -> None:
    """Twenty turns of twenty sources, each answer quoting three and citing nine times: a citation is checked
    against the sources it names, not against every source of the session, so this is well within the limit."""
    from benchmarks.bundle_verify import session
    from ragtui.bundle.checks import MAX_WORK, work

    assert work(session(20, 20, 2000, 3)) < MAX_WORK / 1.5


def test_hostile_page_breaks_and_collection_names_fail_by_name_against_the_collections(bundled: Path,
                                                                                      tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        _source(data, "survey.md")["page_breaks"] = "[" * 100_000
        _source(data, "area.md")["collection"] = "../elsewhere"

    done = _verify(tmp_path, str(_edited(bundled, edit)), "--collections", "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    result = json.loads(done.stdout)
    assert {c["state"] for c in result["citations"]} == {"gone"}          # no such collection here, nor can be
    assert {f["path"] for f in result["failures"]} >= {"$.content.turns[0].sources[0]",
                                                       "$.content.turns[0].sources[1]"}
