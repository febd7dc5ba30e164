"""Engine events of a finished research session, for driving the widgets without the engine.

Used by widget and snapshot tests; the end-to-end tests run the real engine
against the fake Ollama server instead.
"""

from __future__ import annotations

from ragtui.events import (
    AnnotationFinished,
    AnnotationStarted,
    Event,
    RetrievalStarted,
    SessionSaved,
    SourcesReady,
    SynthesisFinished,
    SynthesisStarted,
    SynthesisToken,
)
from ragtui.model import Chunk, ChunkMeta, SessionSource, StopReason, chunk_id
from ragtui.retrieve.result import RetrievalMeta

DOCS = (
    ("demo", "darwin/origin-of-species.pdf", "12", "", "Natural selection acts solely by the preservation of "
     "profitable variations in the struggle for life. It leads to the improvement of each creature."),
    ("demo", "notes/selection.md", "", "Selection > Artificial", "Breeders select small differences over many "
     "generations; the accumulated result is striking."),
    ("demo", "darwin/origin-of-species.pdf", "40", "", "Geological records are imperfect: the intermediate "
     "varieties are rarely preserved as fossils."),
    ("papers", "mendel/experiments.txt", "", "", "The hybrids of peas show the dominant character; the "
     "recessive reappears in one quarter of the offspring."),
    ("demo", "notes/contents.md", "", "Contents", "Chapter 1 ... 3. Chapter 2 ... 17. Chapter 3 ... 29."),
)

ANSWER = ("Natural selection preserves **profitable variations** in the struggle for life [1], much as breeders "
          "accumulate small differences over generations [2]. The fossil record is too imperfect to show every "
          "intermediate form [3].")


def make_sources() -> list[SessionSource]:
    sources = []
    for number, (collection, path, page, heading, text) in enumerate(DOCS, start=1):
        meta = ChunkMeta(collection=collection, source=path, file_hash="0" * 64, format=path.rsplit(".", 1)[-1],
                         chunk_index=0, char_start=0, char_end=len(text), page=page,
                         page_index=int(page) - 1 if page else -1, heading=heading, word_count=len(text.split()))
        legs = ("vector", "keyword") if number % 2 else ("vector",)
        sources.append(SessionSource(number=number, chunk=Chunk(chunk_id(path, number), text, meta),
                              score=1.0 - number / 10, rel_score=1.0 - (number - 1) / 5, legs=legs))
    return sources


def finished_session(stop_reason: str = "stop") -> list[Event]:
    """Retrieval, five annotations (two irrelevant), a streamed answer and the save."""
    sources = make_sources()
    meta = RetrievalMeta.from_json({
        "mode": "hybrid",
        "collections": {"demo": {"keyword": {"tier": "AND"}}, "papers": {"keyword": {"tier": "OR"}}},
        "timings_ms": {"embed": {"nomic-embed-text": 30.0}, "legs_and_merge": 10.4, "postprocess": 1.6}})
    events: list[Event] = [RetrievalStarted(("demo", "papers")),
                           SourcesReady(tuple(sources), meta)]
    for source in sources:
        relevant = source.number <= 3
        text = (f'"{source.chunk.text.split(".")[0]}." Directly answers the question.' if relevant
                else "IRRELEVANT!!! This extract does not address natural selection.")
        events += [AnnotationStarted(source.number), AnnotationFinished(source.number, text, relevant)]
    events.append(SynthesisStarted("chat", (1, 2, 3)))
    events += [SynthesisToken(piece) for piece in ANSWER.split(" ") for piece in (piece + " ",)]
    events += [SynthesisFinished(ANSWER, StopReason(stop_reason), citations=(1, 2, 3)), SessionSaved(1)]
    return events
