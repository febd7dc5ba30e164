"""Untrusted text is inert: the sanitizer, and what the CLI prints from hostile documents, names and models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ragtui.config import Settings
from ragtui.sanitize import clean, one_line, same_length
from tests.cli_run import ROOT, run_ragtui
from tests.fake_ollama import FakeOllama, Reply

# What a terminal acts on: ESC, the C1 controls (0x9b is CSI, 0x9d OSC), BEL, backspace, CR, DEL, bidi overrides.
ACTIVE = [chr(c) for c in (*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0))] + list("\u202e\u2066")
HOSTILE = "\x1b[2J\x1b[H\x1b]0;owned\x07\x1b]52;c;ZWNobyBwd25lZA==\x07\x9b31m\x9d8;;http://x\x9c"


def _inert(text: str, *, newlines: bool) -> bool:
    allowed = {"\t", "\n"} if newlines else set()
    return not any(ch in text for ch in ACTIVE if ch not in allowed)


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_clean_lets_no_control_through(text: str) -> None:
    out = clean(text)
    assert _inert(out, newlines=True)
    assert not any("\ud800" <= ch <= "\udfff" for ch in out)
    assert clean(out) == out


@given(st.text(), st.text())
def test_cleaning_pieces_of_a_stream_is_as_safe_as_cleaning_it_whole(a: str, b: str) -> None:
    assert _inert(clean(a) + clean(b), newlines=True)


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_one_line_escapes_every_control_and_keeps_printable_text(text: str) -> None:
    out = one_line(text)
    assert _inert(out, newlines=False)
    out.encode("utf-8")                                # surrogates (undecodable name bytes) never reach print
    assert out == text or any(ch in text for ch in [*ACTIVE, "\t", "\n"]) or any(
        "\ud800" <= ch <= "\udfff" for ch in text)


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_same_length_is_inert_and_moves_no_offset(text: str) -> None:
    out = same_length(text)
    assert len(out) == len(text) and _inert(out, newlines=True)
    assert [i for i, ch in enumerate(text) if ch == "\n"] == [i for i, ch in enumerate(out) if ch == "\n"]
    assert same_length("a\x1b]52;c;eA==\x07b\r\n") == "a␛]52;c;eA==␇b \n"


def test_plain_text_is_unchanged_and_sequences_vanish_whole() -> None:
    assert clean("Pumps\tstart.\nÜber 20 °C — ok") == "Pumps\tstart.\nÜber 20 °C — ok"
    assert clean(f"before{HOSTILE}after") == "beforeafter"
    assert clean("a\r\nb\rc") == "a\nb c"
    assert one_line("evil\x1b]0;t\x07.md") == "evil\\x1b]0;t\\x07.md"
    assert one_line(os.fsdecode(b"bad\xffname.md")) == "bad\\xffname.md"


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return run_ragtui([sys.executable, "-m", "ragtui", "--data-dir", str(settings.data_dir), "--ollama-host",
                       settings.ollama.host, "--set", "synonyms.enabled=false", "--set", "llm.model=chat",
                       "--set", "embed.model=nomic-embed-text", "--set", "annotation.enabled=false", *args],
                      {**os.environ, "PYTHONPATH": str(ROOT)}, errors="surrogateescape")


def test_hostile_names_documents_and_answers_reach_the_terminal_inert(tmp_path: Path, make_settings,
                                                                       fake_ollama: FakeOllama) -> None:
    settings = make_settings()
    docs = tmp_path / "docs"
    docs.mkdir()
    prose = "Centrifugal pumps start slowly when the discharge valve is closed and the casing is primed. " * 8
    (docs / "title\x1b]0;owned\x07.md").write_text(f"# Pumps\n\n{prose}{HOSTILE} {prose}\n")
    (docs / "other.md").write_text("Turbines and boilers in the plant room need yearly inspection.\n")
    (docs / "clip\x1b]52;c;eA==\x07.txt").write_bytes(b"\x00\x01binary\x1b[2J" * 50)
    runs = [_cli(settings, "ingest", str(docs), "-c", "c"),
            _cli(settings, "query", "-c", "c", "pumps start"),
            _cli(settings, "collections", "info", "c")]
    fake_ollama.script(Reply(pieces=["Pumps ", "start\x1b", "]52;c;ZQ==\x07 slowly ", "\x1b[2J[1]."]))
    runs.append(_cli(settings, "ask", "-c", "c", "how do pumps start?"))
    runs.append(_cli(settings, "history", "show", "1"))
    for proc in runs:
        assert proc.returncode == 0, proc.stderr
        assert _inert(proc.stdout, newlines=True) and _inert(proc.stderr, newlines=True), (proc.args, proc.stdout)
    assert "title\\x1b]0;owned\\x07.md" in runs[1].stdout      # the file can still be told apart
    assert "Pumps start]52;c;ZQ== slowly [1]." in runs[3].stdout
