"""`ragtui ask`, a follow-up, continue and re-annotation against the real model, through the CLI as a user runs
them: each completes, every source ends annotated or failed with a one-line reason, and what the model said is
kept. The follow-up's answer is cut (a small llm.max_tokens), so the continue step always runs. The model's
answers are never judged."""

from __future__ import annotations

import json
from typing import Any

from ragtui.history import HistoryStore
from tests.real.conftest import DEMO_CORPUS, MODEL_ID, Real

QUESTION = "What did Lincoln say at Gettysburg about the dead?"
FOLLOW_UP = "And what does the Declaration say about governments?"
SETTLED = {"relevant", "irrelevant", "failed"}


def settled(turn: dict[str, Any]) -> None:
    """Every source annotated (or failed, saying why in one line) and an answer that ended."""
    assert turn["sources"], "no sources: the demo corpus answers this question"
    for source in turn["sources"]:
        assert source["state"] in SETTLED, source
        if source["state"] == "failed":
            assert source["error"] and "\n" not in source["error"], source
        else:
            assert source["annotated_by"] == MODEL_ID and source["annotation"].strip(), source
    assert turn["answer"].strip() and turn["stop_reason"] in ("stop", "length"), turn


CUT_TOKENS = 8      # llm.max_tokens for the follow-up: its answer is cut, so the continue step always runs


def test_ask_follow_up_continue_and_reannotate(real: Real) -> None:
    asked = real.run("ask", QUESTION, "-c", "demo", "--json")
    assert asked.returncode == 0 and "Traceback" not in asked.stderr, asked.stderr
    first = json.loads(asked.stdout)
    settled(first)
    session = first["session"]

    followed = real.run("ask", "--follow-up", FOLLOW_UP, sets=(f"llm.max_tokens={CUT_TOKENS}",))
    assert followed.returncode == 0 and "Traceback" not in followed.stderr, followed.stderr
    assert "the answer was cut at llm.max_tokens; `ragtui ask --continue` goes on" in followed.stderr
    cut = HistoryStore(real.data).load(session)
    assert cut.id == session and [t.query for t in cut.turns] == [QUESTION, FOLLOW_UP]
    second = cut.turns[1]
    assert second.stop_reason.value == "length" and second.answer.strip() and second.answer in followed.stdout
    assert cut.turns[0].answer == first["answer"]                                # turn 1 kept as it was
    assert min(s.number for s in second.sources) > max(s["number"] for s in first["sources"])
    assert second.context_turns == (1,)

    continued = real.run("ask", "--continue")           # the cut answer, then the rest, as the user reads it
    assert continued.returncode == 0 and "Traceback" not in continued.stderr, continued.stderr
    assert continued.stdout.startswith(second.answer), continued.stdout
    assert f"session {session} saved" in continued.stderr
    whole = HistoryStore(real.data).load(session).turns[1]
    assert whole.continuations == 1 and whole.answer.startswith(second.answer.rstrip())
    assert whole.stop_reason.value in ("stop", "length", "repetition")
    assert len(whole.answer) > len(second.answer) or "repeated its answer instead of continuing" in continued.stderr
    assert continued.stdout.startswith(whole.answer), continued.stdout     # the whole answer, as stored

    number = whole.sources[0].number
    again = real.run("history", "reannotate", str(session), "--source", str(number))
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    said = [line for line in again.stdout.splitlines() if line.startswith(f"  [{number}] ")]
    verdicts = ("relevant (", "relevant, no quote (", "filtered (", "annotation failed:")
    assert len(said) == 1 and any(word in said[0] for word in verdicts), said
    stored = HistoryStore(real.data).load(session)
    assert [t.query for t in stored.turns] == [QUESTION, FOLLOW_UP]
    assert stored.turns[1].answer == whole.answer and stored.turns[0].answer == first["answer"]
    source = stored.source(number)
    assert source.state.value in SETTLED
    assert source.state.value != "failed" or (source.error and "\n" not in source.error)
    assert source.state.value == "failed" or source.annotated_by == MODEL_ID


def test_ask_prints_every_source_and_the_answer(real: Real) -> None:
    """The text a user reads: a line per source (its annotation or one line saying why it failed), the answer."""
    asked = real.run("ask", QUESTION, "-c", "demo", "--limit", "3")
    assert asked.returncode == 0 and "Traceback" not in asked.stderr, asked.stderr
    out = asked.stdout
    assert f"Answer ({MODEL_ID}" in out, out
    verdicts = [line for line in out.splitlines() if line.startswith("  [") and ("relevant (" in line or
                "filtered (" in line or "annotation failed:" in line)]
    assert len(verdicts) == len({line.split("]")[0] for line in verdicts}) >= 1, out


def test_embeddings_from_the_real_servers_v1_embeddings(real: Real) -> None:
    """llama-cpp-python's /v1/embeddings, asked by `embed.provider = "openai"`: the chunks are embedded, or (a chat
    model the server does not pool gives one vector per token) one warning line says so and nothing is stored,
    the chunks waiting ("needs embeddings") while keyword search works."""
    sets = ("embed.provider=openai", f"embed.model={MODEL_ID}")
    ingested = real.run("ingest", str(DEMO_CORPUS), "-c", "embedded", sets=sets)
    assert ingested.returncode == 0 and "Traceback" not in ingested.stderr, ingested.stderr
    indexed = next(line for line in ingested.stdout.splitlines() if line.startswith("chunks:"))
    if " 0 embedded" in indexed:
        warnings = [line for line in ingested.stderr.splitlines() if MODEL_ID in line]
        assert len(warnings) == 1 and "one vector per token" in warnings[0], ingested.stderr
        assert "when the embedding server is reachable" in ingested.stdout
    found = real.run("query", "Gettysburg dead", "-c", "embedded", "--json", sets=sets)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["nodes"], found.stdout
