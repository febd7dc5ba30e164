"""`ragtui mcp` as an MCP client starts it: a real `ragtui mcp` subprocess spoken to over stdio by the official
SDK's own client, against collections ingested through the real CLI and the fake Ollama over HTTP. The tests over
the module's two collections share one server process, as a client's calls do (each server start imports the
engine); the module runs on one pytest-xdist worker, so that it builds them and starts that server once."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.cli_run import cli, command
from tests.fake_ollama import FakeOllama, Reply, default_responder
from tests.ingest.corpus import pdf
from tests.research_run_fakes import ResearchModel

pytestmark = pytest.mark.xdist_group("mcp-server")

PUMP = ("A centrifugal pump moves water by spinning an impeller inside its casing. The impeller throws water "
        "outward, and the casing guides it to the outlet.")
ROOF = "Clay tiles on a pitched roof shed rain into the gutters along the eaves."
VALVE_PAGES = ["The float valve refills the cistern after each flush until the float rises.",
               "A worn washer makes the valve drip; replace the washer to stop it."]
DATACLASSES = ("Frozen instances\n\nIt is not possible to create truly immutable Python objects. However, by "
               "passing frozen=True to the @dataclass decorator you can emulate immutability.\n\n"
               ">>> pairs = [(1, 'one'), (2, 'two'), (3, 'three'), (4, 'four')]\n"
               ">>> pairs.sort(key=lambda pair: pair[1])\n\nThe walrus operator :=. assigns within an expression.")


@pytest.fixture(scope="module")
def ollama() -> Iterator[FakeOllama]:
    server = FakeOllama().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, ollama: FakeOllama) -> Path:
    """A data dir with collection `plumbing` (two text files and a two-page PDF), `house` (one file) and `python`
    (a page of the Python documentation, and five lines on other subjects)."""
    root = tmp_path_factory.mktemp("mcp")
    docs, other, python = root / "docs", root / "other", root / "python"
    for folder in (docs, other, python):
        folder.mkdir()
    (docs / "pump.txt").write_text(PUMP)
    pdf(docs / "valve.pdf", VALVE_PAGES)
    (other / "roof.txt").write_text(ROOF)
    (python / "dataclasses.txt").write_text(DATACLASSES)
    for name in ("lists", "strings", "loops", "files", "modules"):     # enough documents for a word to be rare
        (python / f"{name}.txt").write_text(f"Python {name} are described in the tutorial's chapter on {name}.")
    for folder, name in ((docs, "plumbing"), (other, "house"), (python, "python")):
        done = cli(root, ollama.url, "ingest", str(folder), "-c", name)
        assert done.returncode == 0, done.stderr
    return root


@pytest.fixture(autouse=True)
def answers(ollama: FakeOllama) -> Iterator[None]:
    ollama.responder = default_responder
    yield
    ollama.responder = default_responder


@asynccontextmanager
async def connected(home: Path, ollama: FakeOllama, *flags: str) -> AsyncIterator[Client]:
    argv, env = command(home, ollama.url, "mcp", *flags)
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:], env=env)) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def refusal(client: Client, tool: str, **arguments: Any) -> str:
    """The one error line a refused call gives."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    [content] = result.content
    text: str = content.text        # type: ignore[union-attr]
    assert "\n" not in text and "Traceback" not in text, text
    return text


class Served:
    """One `ragtui mcp` over `home`, its client held open for the whole module on an event loop of its own
    (anyio's blocking portal), so that the tests that only read share one server process; each call runs on
    that loop and waits for its result."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal, self.client = portal, client

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.portal.call(functools.partial(call, self.client, tool, **arguments))

    def refusal(self, tool: str, **arguments: Any) -> str:
        return self.portal.call(functools.partial(refusal, self.client, tool, **arguments))

    def tools(self) -> dict[str, Any]:
        return {t.name: t for t in self.portal.call(self.client.list_tools).tools}

    def resource(self, uri: str) -> Any:
        return json.loads(self.portal.call(self.client.read_resource, uri).contents[0].text)


@pytest.fixture(scope="module")
def served(home: Path, ollama: FakeOllama) -> Iterator[Served]:
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(connected(home, ollama)) as client:
        yield Served(portal, client)


def test_lists_its_tools_and_the_collections_as_resources(served: Served) -> None:
    tools = served.tools()
    assert set(tools) == {"search", "ask", "research", "read", "verify_quote"}
    assert tools["search"].annotations is not None and tools["search"].annotations.read_only_hint
    assert "query" in tools["search"].input_schema["required"]
    collections = served.resource("ragtui://collections")
    assert {c["name"]: (c["state"], c["files"]) for c in collections} == \
        {"house": ("ready", 1), "plumbing": ("ready", 2), "python": ("ready", 6)}
    assert served.resource("ragtui://collections/house")["chunks"] == 1


def test_search_gives_ranked_chunks_with_collection_page_and_score(served: Served) -> None:
    found = served.call("search", query="worn washer valve drip", limit=3)
    top = found["results"][0]
    assert (top["collection"], top["source"], top["page"]) == ("plumbing", "valve.pdf", "i")
    assert "worn washer" in top["text"] and top["score"] > 0 and top["legs"]
    assert found["keyword_only"] is False and len(found["results"]) <= 3

    only_house = served.call("search", query="clay tiles roof", collections=["house"])
    assert {r["collection"] for r in only_house["results"]} == {"house"}

    unknown = served.refusal("search", query="pump", collections=["nope"])
    assert "no collection 'nope'" in unknown and "house, plumbing" in unknown


def test_a_question_searched_again_is_embedded_once(served: Served, ollama: FakeOllama) -> None:
    question = "Which washer stops the valve from dripping"

    def embedded() -> int:
        return sum(question.lower() in json.dumps(r.body.get("input")) for r in ollama.calls("/api/embed"))

    first = served.call("search", query=question)
    assert embedded() == 1 and first["keyword_only"] is False
    again = served.call("search", query=question)
    assert embedded() == 1                               # the server was not asked again
    assert again["results"] == first["results"]


def test_ask_returns_the_answer_its_sources_and_its_quotes_checked(served: Served, ollama: FakeOllama) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        if "EXTRACT" in body["messages"][-1]["content"]:
            return default_responder(body)
        return Reply.text('The pump works by "spinning an impeller inside its casing" [1]. It also '
                          '"pumps oil into the gutters" [1].')

    ollama.responder = respond
    answer = served.call("ask", question="How does a centrifugal pump move water?", collections=["plumbing"])
    assert answer["answer"].startswith("The pump works by") and answer["citations"] == [1]
    assert answer["stop_reason"] == "stop" and answer["failures"] == [] and answer["session"] == 1
    first = answer["sources"][0]
    assert (first["number"], first["source"], first["relevant"]) == (1, "pump.txt", True)
    assert first["annotation"].startswith('"A centrifugal pump moves water')
    checks = {q["quote"]: q["verified"] for q in answer["quotes"]}
    assert checks == {"spinning an impeller inside its casing": True, "pumps oil into the gutters": False}
    assert answer["numbers"] == []                       # it states no figure


def test_an_ask_that_gets_no_answer_is_one_error_line(served: Served, ollama: FakeOllama) -> None:
    ollama.responder = lambda body: Reply(status=500, error="model crashed")
    failed = served.refusal("ask", question="How does a centrifugal pump move water?", collections=["plumbing"])
    assert "synthesize failed: no relevant sources to answer from (1 annotation(s) failed)" in failed, failed
    assert "is saved)" in failed


def test_verify_quote_in_a_chunk_and_in_a_whole_document(served: Served) -> None:
    hit = served.call("search", query="centrifugal pump impeller", collections=["plumbing"])["results"][0]
    assert hit["source"] == "pump.txt"
    said = served.call("verify_quote", quote="The impeller throws water outward...guides it to the outlet",
                       collection="plumbing", chunk_id=hit["chunk_id"])
    assert said["found"] is True and said["checked"] == "chunk"
    not_said = served.call("verify_quote", quote="The impeller throws oil outward",
                           collection="plumbing", chunk_id=hit["chunk_id"])
    assert not_said["found"] is False
    elsewhere = served.call("verify_quote", quote="Clay tiles on a pitched roof", collection="plumbing",
                            source="pump.txt")
    assert elsewhere["found"] is False

    in_pdf = served.call("verify_quote", quote="replace the washer to stop it", collection="plumbing",
                         source="valve.pdf")
    assert in_pdf["found"] is True and [c["page"] for c in in_pdf["in_chunks"]] == ["i"]
    missing = served.refusal("verify_quote", quote="a b c", collection="plumbing", source="nope.txt")
    assert "no indexed document 'nope.txt'" in missing


def test_verify_quote_over_a_session_names_the_source_that_holds_a_misattributed_quote(served: Served) -> None:
    answer = served.call("ask", question="How does the pump move water and the float valve refill the cistern?",
                         collections=["plumbing"])
    by_file = {s["source"]: s["number"] for s in reversed(answer["sources"])}
    pump, valve = by_file["pump.txt"], by_file["valve.pdf"]
    text = served.call("read", session=answer["session"], number=valve, context_chars=0)["text"]
    quote = " ".join(text.split()[:6])
    wrong = served.call("verify_quote", quote=quote, session=answer["session"], number=pump)
    assert (wrong["found"], wrong["checked"], wrong["state"]) == (False, "session", "misattributed")
    assert valve in wrong["found_in"] and pump not in wrong["found_in"]
    found_in = " ".join(f"[{n}]" for n in wrong["found_in"])
    assert wrong["verdict"] == f"misattributed to [{pump}], found in {found_in}"
    right = served.call("verify_quote", quote=quote, session=answer["session"], number=valve)
    assert (right["found"], right["state"], right["verdict"]) == (True, "verified", f"verified in [{valve}]")
    anywhere = served.call("verify_quote", quote=quote, session=answer["session"])
    assert anywhere["found"] is True and "verdict" not in anywhere
    nowhere = served.call("verify_quote", quote="pumps oil into the gutters", session=answer["session"],
                          number=pump)
    assert (nowhere["state"], nowhere["found_in"]) == ("not_found", [])
    assert nowhere["verdict"] == f"not found in [{pump}] nor in any other source"
    assert "has no source [99]" in served.refusal("verify_quote", quote=quote, session=answer["session"], number=99)
    assert "one of them" in served.refusal("verify_quote", quote=quote, session=answer["session"],
                                           collection="plumbing", source="pump.txt")


def test_read_shows_a_chunk_in_its_document_by_id_or_by_citation(served: Served) -> None:
    hit = served.call("search", query="float valve cistern", collections=["plumbing"])["results"][0]
    shown = served.call("read", collection="plumbing", chunk_id=hit["chunk_id"], context_chars=10)
    assert shown["text"] == hit["text"] and shown["source"] == "valve.pdf"
    assert len(shown["before"]) <= 10 and len(shown["after"]) <= 10
    assert shown["shown"][1] - shown["shown"][0] <= len(shown["text"]) + 20

    answer = served.call("ask", question="How does the float valve refill the cistern?", collections=["plumbing"])
    cited = served.call("read", session=answer["session"], number=1)
    assert cited["chunk_id"] == answer["sources"][0]["chunk_id"]
    assert "no source [99]" in served.refusal("read", session=answer["session"], number=99)
    assert "either by collection and chunk_id" in served.refusal("read", collection="plumbing",
                                                                 chunk_id="x", session=1, number=1)
    assert "holds no chunk 'x'" in served.refusal("read", collection="plumbing", chunk_id="x")


def test_an_oversized_argument_is_refused_with_one_line_and_the_server_goes_on(served: Served,
                                                                                 ollama: FakeOllama) -> None:
    too_long = served.refusal("search", query="pump " * 1000)
    assert "query is 5,000 characters; the most this server takes is 2,000" in too_long
    assert "quote is 4,001 characters" in served.refusal("verify_quote", quote="x" * 4001,
                                                         collection="plumbing", source="pump.txt")
    assert "limit must be from 1 to 50, not 500" in served.refusal("search", query="pump", limit=500)
    assert "context_chars must be from 0 to 8000" in served.refusal("read", collection="plumbing",
                                                                    chunk_id="x", context_chars=10**9)
    assert served.call("search", query="pump")["results"]
    asked = [c for c in ollama.calls("/api/embed") if "pump pump" in json.dumps(c.body)]
    assert asked == []          # refused before anything ran


async def test_read_only_unless_started_with_allow_ingest(ollama: FakeOllama, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "lamp.txt").write_text("An oil lamp burns paraffin drawn up through a cotton wick.")
    for name in ("stove", "kettle", "clock", "chair", "rug"):          # enough documents for a word to be rare
        (extra / f"{name}.txt").write_text(f"The {name} stands in the room by the window.")
    async with connected(tmp_path, ollama) as client:
        assert "ingest" not in {t.name for t in (await client.list_tools()).tools}
        refused = await client.call_tool("ingest", {"path": str(extra), "collection": "lamps"})
        assert refused.is_error and "ingest" in refused.content[0].text      # type: ignore[union-attr]
        assert "no collections yet" in await refusal(client, "search", query="paraffin wick")
    assert not (tmp_path / "data" / "collections" / "lamps").exists()

    async with connected(tmp_path, ollama, "--allow-ingest") as client:
        assert "ingest" in {t.name for t in (await client.list_tools()).tools}
        report = await call(client, "ingest", path=str(extra), collection="lamps")
        assert report["report"][0].startswith("collection lamps: 6 added"), report
        found = await call(client, "search", query="oil lamp paraffin wick", collections=["lamps"])
        assert found["results"][0]["source"] == "lamp.txt"


def test_a_filter_narrows_search_and_ask_to_one_file_and_is_echoed(served: Served) -> None:
    unfiltered = served.call("search", query="worn washer valve drip", collections=["plumbing"])
    assert unfiltered["results"][0]["source"] == "valve.pdf" and unfiltered["filter"] == []
    narrowed = served.call("search", query="worn washer valve drip", collections=["plumbing"], filter=["path:pump.txt"])
    assert {r["source"] for r in narrowed["results"]} <= {"pump.txt"}      # the best match lies outside
    assert narrowed["filter"] == ["path:pump.txt"]
    within = served.call("search", query="worn washer valve drip", filter=["path:valve.pdf"])
    assert within["results"] and {r["source"] for r in within["results"]} == {"valve.pdf"}

    answer = served.call("ask", question="How does a centrifugal pump move water?",
                         collections=["plumbing"], filter=["pump.txt"])
    assert answer["filter"] == ["path:pump.txt"]
    assert answer["sources"] and {s["source"] for s in answer["sources"]} == {"pump.txt"}


def test_a_bad_filter_is_one_error_line(served: Served) -> None:
    assert "empty heading filter" in served.refusal("search", query="pump", filter=["heading:"])
    assert "too many filters (33); at most 32" in served.refusal("search", query="pump",
                                                                 filter=[f"p{i}.txt" for i in range(33)])
    assert "longer than 512 characters" in served.refusal("ask", question="pump?", filter=["path:" + "x" * 600])
    assert "control character" in served.refusal("search", query="pump", filter=["path:a\x1b[2J"])
    assert served.call("search", query="pump")["results"]


@pytest.mark.parametrize("quote", ["Frozen instances", "walrus operator :=.",
                                   ">>> pairs = [(1, 'one'), (2, 'two'), (3, 'three'), (4, 'four')]",
                                   "frozen instances cannot be hashed"])
def test_the_no_quote_mark_and_verify_quote_agree(served: Served, ollama: FakeOllama, quote: str) -> None:
    """A heading, a short phrase and a code line the chunk holds are quotes to both; a sentence it lacks to
    neither. The annotator quotes `quote`; the answer is the fake's usual one."""
    def respond(body: dict[str, Any]) -> Reply:
        if "EXTRACT" in body["messages"][-1]["content"]:
            return Reply.text(f'"{quote}"\n\nThis is relevant: it is where the documentation answers it.')
        return default_responder(body)

    ollama.responder = respond
    answer = served.call("ask", question="How can I make instances of a dataclass immutable?",
                         collections=["python"])
    source = answer["sources"][0]
    assert source["source"] == "dataclasses.txt" and source["relevant"]
    assert source["annotation"].startswith(f'"{quote}"')
    verified = served.call("verify_quote", quote=quote, collection="python", chunk_id=source["chunk_id"])
    assert verified["found"] is (quote != "frozen instances cannot be hashed")
    assert source["quoteless"] is not verified["found"]


def test_research_plans_gathers_and_reports_through_the_sdk_client(served: Served, ollama: FakeOllama) -> None:
    model = ResearchModel(plan="1. How does a centrifugal pump move water?\n2. How does a worn washer make a "
                               "valve drip?")
    ollama.responder = model
    run = served.call("research", question="How does a centrifugal pump move water, and why does a valve drip?",
                      collections=["plumbing"], max_rounds=1)
    assert [p["text"] for p in run["plan"]] == ["How does a centrifugal pump move water?",
                                                "How does a worn washer make a valve drip?"]
    assert run["planned_by"] == "chat" and run["failures"] == [] and run["limits_hit"] == []
    parts = {s["source"]: s["part"] for s in run["sources"] if s["kept"]}
    assert parts["pump.txt"] == 1 and parts["valve.pdf"] == 2
    assert run["report"] and sorted(run["citations"]) == run["kept"]
    assert "THE QUESTION HAS THESE PARTS" in model.reports[-1]
    # the plan, one call per source annotated, one gap check (NONE), the report
    assert run["model_calls"] == 3 + len(run["sources"]) and model.gap_checks == 1
    refused = served.refusal("research", question="pump", max_rounds=11)
    assert refused.endswith("max_rounds must be from 0 to 10, not 11")
