"""`ragtui history export ID --format bibtex|csl-json|markdown`: one entry per cited document, each [N] as a citation
with its page locator, keys from a .bib beside the documents, else the PDF's metadata, else the file name; parsed
back with bibtexparser and checked against the CSL-JSON shape; a real ingest and ask through the fake Ollama."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import bibtexparser
import pytest

from ragtui.bibliography.bibfile import parse_bib
from ragtui.bibliography.render import CSL_TYPES
from ragtui.cli import main
from tests.fake_ollama import FakeOllama, Reply, default_responder
from tests.ingest.test_page_ranges import QUOTE, write_pdf

BIB = r"""
% Exported by Better BibTeX for Zotero
@article{smith2019film,
  title = {Film {Cooling} of Turbine Blades},
  author = {Smith, Ada and Lee, Bo},
  year = {2019},
  journal = {Journal of Turbomachinery},
  doi = {10.1000/jt.2019.1},
  note = {read <ESC>[31min red<ESC>[0m},
  file = {/home/ada/Zotero/storage/AB12CD/cooling.pdf}
}
@book{other2001, title = "Not cited", year = 2001, file = {:other.pdf:PDF}}
""".replace("<ESC>", "\x1b")
FAKE_QUOTE = "turbine blades are carved from solid chocolate"


def flags(tmp_path: Path, fake: FakeOllama) -> list[str]:
    return ["--config", os.devnull, "--data-dir", str(tmp_path / "data"), "--ollama-host", fake.url,
            "--set", "synonyms.enabled=false", "--set", "llm.model=chat", "--set", "retrieve.min_similarity=0",
            "--set", "keyword.min_query_ic=0"]


def citing_everything(body: dict[str, Any]) -> Reply:
    """Annotations as usual; the answer quotes QUOTE (which a source holds) and FAKE_QUOTE (which none does), and
    cites every source."""
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    if "EXTRACT" in text:
        return default_responder(body)
    cites = "".join(f"[{n}]" for n in range(1, 9))
    return Reply.text(f'The paper says "{QUOTE}" {cites}. Another claims "{FAKE_QUOTE}" [1].')


@pytest.fixture
def session(tmp_path: Path, fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]) -> int:
    import pymupdf

    folder = tmp_path / "library"
    folder.mkdir()
    write_pdf(folder / "cooling.pdf")
    with pymupdf.open() as doc:
        doc.new_page().insert_text((50, 80), "Turbine blade cooling measured in a heat transfer rig.", fontsize=11)
        doc.set_metadata({"title": "Heat & Mass_Transfer {draft} 100% \\ok", "author": "Grace Hopper; Alan Turing",
                          "creationDate": "D:20210305120000"})
        doc.save(str(folder / "heat.pdf"))
    (folder / "blade notes.txt").write_text("Turbine blade cooling notes: the coolant film matters.", encoding="utf-8")
    (folder / "refs.bib").write_text(BIB, encoding="utf-8")
    assert main([*flags(tmp_path, fake_ollama), "ingest", str(folder), "-c", "lab"]) == 0
    capsys.readouterr()
    fake_ollama.responder = citing_everything
    assert main([*flags(tmp_path, fake_ollama), "ask", "turbine blade coolant film cooling", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {s["label"].split(" [")[0] for s in out["sources"]} >= {"lab/cooling.pdf", "lab/heat.pdf",
                                                                   "lab/blade notes.txt"}
    return int(out["session"])


def export(tmp_path: Path, fake: FakeOllama, capsys: pytest.CaptureFixture[str], session_id: int, fmt: str) -> str:
    assert main([*flags(tmp_path, fake), "history", "export", str(session_id), "--format", fmt]) == 0
    return capsys.readouterr().out


def cited(tmp_path: Path, fake: FakeOllama, capsys: pytest.CaptureFixture[str], session_id: int) -> list[dict]:
    assert main([*flags(tmp_path, fake), "ask", "--resynthesize", "--session", str(session_id), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    return [s for s in out["sources"] if s["number"] in out["citations"]]


def test_bibtex_export_parses_back_with_keys_from_the_bib_beside_the_documents(
        session: int, tmp_path: Path, fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]) -> None:
    text = export(tmp_path, fake_ollama, capsys, session, "bibtex")
    library = bibtexparser.parse_string(text)
    assert not library.failed_blocks
    entries = {e.key: e for e in library.entries}
    sources = cited(tmp_path, fake_ollama, capsys, session)
    documents = {s["label"].split(" [")[0] for s in sources}
    assert len(entries) == len(documents) == 3                    # one entry per cited document
    film = entries["smith2019film"]                                # the .bib's own key and fields
    assert film.entry_type == "article" and film.fields_dict["doi"].value == "10.1000/jt.2019.1"
    assert film.fields_dict["title"].value == "Film {Cooling} of Turbine Blades"
    assert film.fields_dict["note"].value == "read in red" and "\x1b" not in text   # no escape sequence
    heat = next(e for e in entries.values() if "Heat" in e.fields_dict["title"].value)
    assert heat.key == "hopper2021heat"                            # from the PDF's metadata
    assert heat.fields_dict["title"].value == r"Heat \& Mass\_Transfer \{draft\} 100\% \textbackslash{}ok"
    assert heat.fields_dict["author"].value == "Grace Hopper and Alan Turing"
    assert heat.fields_dict["year"].value == "2021"
    notes = next(e for e in entries.values() if e.key not in ("smith2019film", heat.key))
    assert notes.key == "blade-notes" and notes.fields_dict["title"].value == "blade notes.txt"
    # each [N] as a citation with its page locator
    for s in sources:
        key = {"lab/cooling.pdf": "smith2019film", "lab/heat.pdf": heat.key}.get(s["label"].split(" [")[0],
                                                                                  notes.key)
        if s["page"] and s["page"] != s["page_last"]:
            cite = rf"\cite[pp.~{s['page']}--{s['page_last']}]{{{key}}}"
        elif s["page"]:
            cite = rf"\cite[p.~{s['page']}]{{{key}}}"
        else:
            cite = rf"\cite{{{key}}}"
        assert f"% [{s['number']}] {cite}" in text.splitlines()
    assert any(s["page"] != s["page_last"] for s in sources)       # a range among them


def test_csl_json_export_has_the_csl_shape_and_the_locators(
        session: int, tmp_path: Path, fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(export(tmp_path, fake_ollama, capsys, session, "csl-json"))
    assert set(data) == {"items", "citations"}
    ids = [item["id"] for item in data["items"]]
    assert len(ids) == len(set(ids)) == 3
    for item in data["items"]:
        assert set(item) <= {"id", "type", "title", "author", "issued", "container-title", "publisher", "DOI",
                             "URL", "volume", "issue", "ISBN"}
        assert item["type"] in set(CSL_TYPES.values()) | {"document"} and isinstance(item["title"], str)
        for name in item.get("author", []):
            assert set(name) in ({"family", "given"}, {"literal"}) and all(isinstance(v, str) for v in name.values())
        if "issued" in item:
            assert isinstance(item["issued"]["date-parts"][0][0], int)
    film = next(i for i in data["items"] if i["id"] == "smith2019film")
    assert film["type"] == "article-journal" and film["title"] == "Film Cooling of Turbine Blades"
    assert film["author"][0] == {"family": "Smith", "given": "Ada"} and film["DOI"] == "10.1000/jt.2019.1"
    assert film["issued"] == {"date-parts": [[2019]]} and film["container-title"] == "Journal of Turbomachinery"
    sources = {s["number"]: s for s in cited(tmp_path, fake_ollama, capsys, session)}
    assert {c["number"] for c in data["citations"]} == set(sources)
    for c in data["citations"]:
        (item,) = c["citationItems"]
        s = sources[c["number"]]
        assert item["id"] in ids
        pages = s["page"] if s["page"] == s["page_last"] else f"{s['page']}-{s['page_last']}"
        assert item.get("locator", "") == pages and (item.get("label") == "page") == bool(pages)


def test_markdown_export_keeps_its_shape_and_adds_the_checked_quotes(
        session: int, tmp_path: Path, fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]) -> None:
    text = export(tmp_path, fake_ollama, capsys, session, "markdown")
    assert text.startswith("# ") and "## Answer" in text and "## Sources" in text
    quotes = text.split("## Quotes checked", 1)[1]
    assert f"“{QUOTE}” — verified in [" in quotes
    assert f"“{FAKE_QUOTE}” — not found in [1] nor in any other source" in quotes


def test_a_configured_bib_file_comes_first_and_a_missing_one_is_a_usage_error(
        session: int, tmp_path: Path, fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine.bib"
    mine.write_text("@misc{mine-notes, title = {My notes}, file = {blade notes.txt}}", encoding="utf-8")
    text = export(tmp_path, fake_ollama, capsys, session, "bibtex")
    assert "@misc{mine-notes" not in text
    assert main([*flags(tmp_path, fake_ollama), "--set", f"cite.bib_file={mine}", "history", "export",
                 str(session), "--format", "bibtex"]) == 0
    assert "@misc{mine-notes," in capsys.readouterr().out
    assert main([*flags(tmp_path, fake_ollama), "--set", f"cite.bib_file={tmp_path / 'gone.bib'}", "history",
                 "export", str(session), "--format", "csl-json"]) == 2
    assert "cite.bib_file" in capsys.readouterr().err


def test_a_hostile_bib_file_is_read_without_crashing() -> None:
    entries = list(parse_bib("@article{ok, title = {A {nested} title}, author = \"Doe, J.\" # \" and Roe, R.\","
                             " file = {C:\\Users\\x\\Doe 2020.pdf;:rel/b.PDF:PDF}}\n"
                             "@comment{ignored} @string{jt = \"J. Turb.\"} @book{open, title = {never closed"))
    assert [e.key for e in entries] == ["ok"]
    assert entries[0].fields["title"] == "A {nested} title" and entries[0].fields["author"] == "Doe, J. and Roe, R."
    assert entries[0].files() == ["doe 2020.pdf", "b.pdf"]


HOSTILE_BIB = r"""
@misc{found2020,
  title = {Cooling G{\"o}del's \'Erd\H{o}s blades \input{/etc/passwd}},
  note = {\immediate\write18{touch /tmp/pwned} and ^^5cinput{x}},
  file = {pumps.txt}
}
"""


def test_a_bib_found_beside_the_documents_has_its_tex_commands_neutralised(tmp_path: Path,
                                                                          fake_ollama: FakeOllama) -> None:
    """Documents arrive with .bib files from anyone: their \\input and \\write18 reach the export inert, accents
    stay; the user's own cite.bib_file is kept as written. Through the CLI in subprocesses."""
    from tests.cli_run import cli

    folder = tmp_path / "library"
    folder.mkdir()
    (folder / "pumps.txt").write_text("Turbine blade cooling: the coolant film matters. " * 3, encoding="utf-8")
    (folder / "refs.bib").write_text(HOSTILE_BIB, encoding="utf-8")
    assert cli(tmp_path, fake_ollama.url, "ingest", str(folder), "-c", "lab").returncode == 0
    asked = cli(tmp_path, fake_ollama.url, "ask", "turbine blade coolant film", "-c", "lab", "--json")
    assert asked.returncode == 0, asked.stderr
    session = str(json.loads(asked.stdout)["session"])

    found = cli(tmp_path, fake_ollama.url, "history", "export", session, "--format", "bibtex")
    assert found.returncode == 0, found.stderr
    entry = {e.key: e for e in bibtexparser.parse_string(found.stdout).entries}["found2020"]
    assert entry.fields_dict["title"].value == \
        r"""Cooling G{\"o}del's \'Erd\H{o}s blades \textbackslash{}input{/etc/passwd}"""
    assert entry.fields_dict["note"].value == \
        r"\textbackslash{}immediate\textbackslash{}write18{touch /tmp/pwned} and \^{}\^{}5cinput{x}"
    assert "\\input" not in found.stdout and "\\write18" not in found.stdout and "^^" not in found.stdout

    own = cli(tmp_path, fake_ollama.url, "--set", f"cite.bib_file={folder / 'refs.bib'}", "history", "export",
              session, "--format", "bibtex")
    assert own.returncode == 0, own.stderr
    assert r"\input{/etc/passwd}" in own.stdout                     # the user's own file: as written


def test_entries_take_the_page_title_and_the_type_the_evidence_shows_and_no_software_as_author(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """An HTML page is titled by its <title>, not its file name; a PDF manual is @manual and another PDF @misc
    (nothing in a PDF names a journal, which @article needs); the program that wrote a PDF is no author."""
    import pymupdf

    from tests.cli_run import cli

    folder = tmp_path / "library"
    folder.mkdir()
    (folder / "3.8.html").write_text(
        "<html><head><title>What&#39;s New In Python 3.8</title></head><body><main><h1>Summary</h1>"
        "<p>Turbine blade cooling arrives as an assignment expression in this release of the language.</p>"
        "</main></body></html>", encoding="utf-8")
    for name, title in (("gnuplot.pdf", "Gnuplot User Manual"), ("plot.pdf", "Cooling curves of turbine blades")):
        with pymupdf.open() as doc:
            doc.new_page().insert_text((50, 80), f"{title}: turbine blade cooling plotted.", fontsize=11)
            doc.set_metadata({"title": title, "author": "gnuplot", "creator": "gnuplot 5.4 patchlevel 2"})
            doc.save(str(folder / name))
    base = ("--set", "retrieve.min_similarity=0", "--set", "keyword.min_query_ic=0")
    assert cli(tmp_path, fake_ollama.url, *base, "ingest", str(folder), "-c", "lab").returncode == 0
    fake_ollama.responder = citing_everything
    asked = cli(tmp_path, fake_ollama.url, *base, "ask", "turbine blade cooling", "-c", "lab", "--json")
    assert asked.returncode == 0, asked.stderr
    cited = {s["label"].split(" [")[0] for s in json.loads(asked.stdout)["sources"]}
    assert cited == {"lab/3.8.html", "lab/gnuplot.pdf", "lab/plot.pdf"}, cited

    exported = cli(tmp_path, fake_ollama.url, "history", "export", str(json.loads(asked.stdout)["session"]),
                   "--format", "bibtex")
    assert exported.returncode == 0, exported.stderr
    entries = {e.fields_dict["title"].value: e for e in bibtexparser.parse_string(exported.stdout).entries}
    assert set(entries) == {"What's New In Python 3.8", "Gnuplot User Manual", "Cooling curves of turbine blades"}
    assert entries["What's New In Python 3.8"].entry_type == "misc"
    assert entries["Gnuplot User Manual"].entry_type == "manual"
    assert entries["Cooling curves of turbine blades"].entry_type == "misc"
    assert all("author" not in e.fields_dict for e in entries.values())
