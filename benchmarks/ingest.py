"""Ingest benchmark: 10k text chunks, timed without embedding and with the fake embedder.

    python -m benchmarks.ingest [--chunks 10000] [--size-tokens 512]

"Without embedding" points Ollama at a closed loopback port with one attempt, so
the run measures extract + chunk + filter + records + Whoosh (spec 13: 10k text
chunks excluding embedding < 60 s). "With the fake embedder" runs the tests' fake
Ollama in a separate process and adds the embedding calls and the Chroma writes.
Every run starts from an empty data dir. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from ragtui.config import Settings, load_settings
from ragtui.events import IngestFinished

VOCAB_TEXT = ("pump valve pressure flow water tank pipe seal motor shaft bearing gear torque energy heat cycle "
         "system design load stress steel joint weld bolt frame beam column force moment fluid turbine blade "
         "rotor stator current voltage circuit sensor signal control loop feedback model data measure error "
         "sample result method study analysis report test field site survey plan cost budget risk safety")
VOCAB = VOCAB_TEXT.split()


def prose(rng: random.Random, chars: int) -> str:
    out, n = [], 0
    while n < chars:
        words = [rng.choice(VOCAB) for _ in range(rng.randint(8, 20))]
        sentence = " ".join(words).capitalize() + rng.choice(".!?.") + (" " if rng.random() < 0.85 else "\n")
        out.append(sentence)
        n += len(sentence)
    return "".join(out)


def make_corpus(root: Path, chunks: int, size_tokens: int) -> None:
    """Files of ~10 chunks each (RAGWeed windows at 50% overlap advance ~half a window per chunk)."""
    rng = random.Random(13)
    step = size_tokens * 4 // 2
    files = max(1, chunks // 10)
    for i in range(files):
        (root / f"doc{i:05d}.txt").write_text(prose(rng, step * 10 + step // 2))


def _serve(queue: Any) -> None:
    from tests.fake_ollama import FakeOllama

    queue.put(FakeOllama().start().url)
    while True:
        time.sleep(3600)


def settings_for(data: Path, host: str, size_tokens: int, extra: list[str]) -> Settings:
    return load_settings(user_file=data / "none.toml", env={}, overrides=[
        f"storage.data_dir={data}", f"ollama.host={host}", f"chunk.size_tokens={size_tokens}", *extra])


def timed_ingest(settings: Settings, folder: Path) -> dict[str, Any]:
    from ragtui.workspace import Workspace

    async def run() -> Any:
        report = None
        async with Workspace(settings) as workspace:
            async for event in workspace.ingest([folder], "bench"):
                if isinstance(event, IngestFinished):
                    report = event.report
        return report

    began = time.perf_counter()
    report = asyncio.run(run())
    elapsed = time.perf_counter() - began
    return {"seconds": round(elapsed, 2), "chunks": report.chunks_indexed, "embedded": report.chunks_embedded,
            "chunks_per_s": round(report.chunks_indexed / elapsed, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--size-tokens", type=int, default=512)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        corpus = root / "corpus"
        corpus.mkdir()
        make_corpus(corpus, args.chunks, args.size_tokens)
        result: dict[str, Any] = {"size_tokens": args.size_tokens, "files": len(list(corpus.iterdir()))}
        offline = settings_for(root / "a", "http://127.0.0.1:9", args.size_tokens,
                               ["embed.retries=1", "embed.backoff_s=0"])
        result["without_embedding"] = timed_ingest(offline, corpus)
        queue: Any = mp.get_context("spawn").Queue()
        server = mp.get_context("spawn").Process(target=_serve, args=(queue,), daemon=True)
        server.start()
        try:
            url = queue.get(timeout=60)
            result["with_fake_embedder"] = timed_ingest(settings_for(root / "b", url, args.size_tokens, []), corpus)
        finally:
            server.terminate()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
