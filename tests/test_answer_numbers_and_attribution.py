"""The checks on a finished answer through `ragtui ask` and the fake Ollama over HTTP: a number its cited source
does not hold, and a quote cited to the wrong source, each reported on stderr and in --json, and the same when
the saved session is reopened (checked from what the history stores)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from ragtui.config import Settings
from tests.fake_ollama import FakeOllama
from tests.model_habits import as_reply, changes_a_number, misattributes_quotes
from tests.test_quotes import _cli

SURVEY = "The survey found that 85% of farms use drip irrigation.\nIt was run by the farm bureau."
AREA = "Drip irrigation covers 1,500,000 hectares of farmland.\nMost of it lies in the south."
QUESTION = "How much farmland uses drip irrigation?"


def _ingested(tmp_path: Path, settings: Settings) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "survey.md").write_text(SURVEY + "\n")
    (docs / "area.md").write_text(AREA + "\n")
    done = _cli(settings, "ingest", str(docs), "-c", "farms")
    assert done.returncode == 0, done.stderr


def _numbered(stdout: str) -> dict[str, int]:
    return {label: int(n) for n, label in re.findall(r"(?m)^  \[(\d+)\] (\S+)  score", stdout)}


def test_a_changed_number_is_flagged_and_the_same_number_written_otherwise_is_not(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    _ingested(tmp_path, settings)
    fake_ollama.responder = as_reply(changes_a_number)

    text = _cli(settings, "ask", "-c", "farms", QUESTION)
    assert text.returncode == 0, text.stderr
    survey = _numbered(text.stdout)["farms/survey.md"]
    assert "1.5 million hectares" in text.stdout and "87% of farms" in text.stdout     # both restated
    warnings = [line for line in text.stderr.splitlines() if "a number not in the source cited" in line]
    assert warnings == [f"ragtui: warning: a number not in the source cited: 85% in [{survey}], the answer says "
                        f"87% (in 'The survey found that 87% of farms use drip irrigation [{survey}].')"]

    data = json.loads(_cli(settings, "ask", "-c", "farms", "--json", QUESTION).stdout)
    n = {s["label"]: s["number"] for s in data["sources"]}["farms/survey.md"]
    expected = [{"stated": "87%", "cited": [n], "near": "85%", "near_in": n,
                 "sentence": f"The survey found that 87% of farms use drip irrigation [{n}].",
                 "verdict": f"85% in [{n}], the answer says 87%"}]
    assert data["numbers"] == expected

    # reopened: a follow-up reloads the session from the history, and its first turn is checked the same way
    again = _cli(settings, "ask", "--session", str(data["session"]), "--follow-up", "And where?", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["turns"][0]["numbers"] == expected


def test_a_quote_cited_to_the_wrong_source_is_named_with_the_one_that_holds_it(
        tmp_path: Path, make_settings: Callable[..., Settings], fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    _ingested(tmp_path, settings)
    fake_ollama.responder = as_reply(misattributes_quotes)

    data = json.loads(_cli(settings, "ask", "-c", "farms", "--json", QUESTION).stdout)
    by_label = {s["label"]: s["number"] for s in data["sources"]}
    survey, area = by_label["farms/survey.md"], by_label["farms/area.md"]
    states = {q["quote"]: (q["state"], q["verdict"]) for q in data["quotes"]}
    assert states == {
        "The survey found that 85% of": ("misattributed", f"misattributed to [{area}], found in [{survey}]"),
        "Drip irrigation covers 1,500,000 hectares of": ("misattributed",
                                                         f"misattributed to [{survey}], found in [{area}]")}

    text = _cli(settings, "ask", "-c", "farms", QUESTION)
    assert (f"ragtui: warning: the answer's quote 'The survey found that 85% of' is misattributed to [{area}], "
            f"found in [{survey}]") in text.stderr
    exported = _cli(settings, "history", "export", str(data["session"]))
    assert f"“The survey found that 85% of” — misattributed to [{area}], found in [{survey}]" in exported.stdout
