"""Engine overhead of a research session against the fake Ollama (no model time to speak of).

    .venv/bin/python -m benchmarks.research_overhead

Measures: annotation wall time for 64 sources at concurrency 1/4/8 when every
call takes ~50 ms at the server (5 pieces x 10 ms), and streamed synthesis
throughput (tokens/s through ChatModel -> ResearchSession -> events) for a
4,000-token answer with no server delay.
"""

from __future__ import annotations

import asyncio
import tempfile
import time

from ragtui.config import load_settings
from ragtui.events import SynthesisToken
from tests.fake_ollama import FakeOllama, Reply
from tests.research_helpers import StaticRetrieval, new_session

TEXTS = [f"Source {i} says pumps start at {i} bar. " * 20 for i in range(64)]


async def annotate_time(fake: FakeOllama, concurrency: int, data: str) -> float:
    settings = load_settings(env={}, overrides=[f"storage.data_dir={data}", f"ollama.host={fake.url}",
                                                "llm.model=chat", f"annotation.concurrency={concurrency}"])
    fake.responder = lambda body: (Reply(pieces=["a "] * 5, delay=0.01) if "EXTRACT" in str(body)
                                   else Reply.text("Done [1]."))
    session = new_session(settings, "pumps?", StaticRetrieval(TEXTS))
    start = time.perf_counter()
    async for _ in session.run():
        pass
    await session.aclose()
    return session.turn.timings["annotate_s"] or time.perf_counter() - start


async def stream_rate(fake: FakeOllama, data: str) -> float:
    settings = load_settings(env={}, overrides=[f"storage.data_dir={data}", f"ollama.host={fake.url}",
                                                "llm.model=chat", "annotation.enabled=false"])
    fake.responder = lambda body: Reply(pieces=[f"w{i} " for i in range(4000)])
    session = new_session(settings, "pumps?", StaticRetrieval(TEXTS[:8]))
    tokens = 0
    start = time.perf_counter()
    async for event in session.run():
        tokens += isinstance(event, SynthesisToken)
    await session.aclose()
    return tokens / (time.perf_counter() - start)


async def main() -> None:
    fake = FakeOllama().start()
    try:
        with tempfile.TemporaryDirectory() as data:
            for concurrency in (1, 4, 8):
                seconds = await annotate_time(fake, concurrency, data)
                print(f"annotate 64 sources, concurrency {concurrency}: {seconds:.2f} s "
                      f"(max in flight at the server: {fake.max_in_flight})")
                fake.max_in_flight = 0
            print(f"synthesis stream: {await stream_rate(fake, data):,.0f} tokens/s through the session")
    finally:
        fake.stop()


if __name__ == "__main__":
    asyncio.run(main())
