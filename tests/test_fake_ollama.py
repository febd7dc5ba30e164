"""The fake server must behave like Ollama for the real client, or every other test lies."""

from __future__ import annotations

import math

import ollama
import pytest

from tests.fake_ollama import FakeOllama, Reply, hashed_embedding


def cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_embeddings_are_unit_and_related_texts_are_near() -> None:
    a = hashed_embedding("Flushing the toilet tank", 64)
    b = hashed_embedding("toilet flush tanks", 64)
    c = hashed_embedding("quantum chromodynamics lattice", 64)
    assert math.isclose(sum(x * x for x in a), 1.0)
    assert cos(a, b) > 0.8 > cos(a, c)


def test_client_round_trip(fake_ollama: FakeOllama) -> None:
    client = ollama.Client(host=fake_ollama.url)
    assert {m.model for m in client.list().models} >= {"chat:latest", "nomic-embed-text:latest"}
    emb = client.embed(model="nomic-embed-text", input=["a b", "c d"])
    assert len(emb.embeddings) == 2 and len(emb.embeddings[0]) == 64
    fake_ollama.script(Reply(pieces=["Hel", "lo"], done_reason="length"))
    parts = list(client.chat(model="chat", messages=[{"role": "user", "content": "hi"}], stream=True,
                             options={"num_ctx": 4096}))
    assert "".join(p.message.content for p in parts) == "Hello"
    assert parts[-1].done_reason == "length"
    assert fake_ollama.calls("/api/chat")[-1].body["options"]["num_ctx"] == 4096


def test_unknown_model_is_404(fake_ollama: FakeOllama) -> None:
    with pytest.raises(ollama.ResponseError) as info:
        ollama.Client(host=fake_ollama.url).embed(model="nope", input="x")
    assert info.value.status_code == 404 and "pull" in str(info.value)


def test_scripted_error_and_num_predict(fake_ollama: FakeOllama) -> None:
    client = ollama.Client(host=fake_ollama.url)
    fake_ollama.script(Reply(status=500, error="boom"))
    with pytest.raises(ollama.ResponseError):
        client.chat(model="chat", messages=[{"role": "user", "content": "x"}])
    fake_ollama.script(Reply.text("one two three four"))
    r = client.chat(model="chat", messages=[{"role": "user", "content": "x"}], options={"num_predict": 2})
    assert r.message.content == "one two " and r.done_reason == "length"
