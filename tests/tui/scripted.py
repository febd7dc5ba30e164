"""Engine events of a finished research session, for driving the widgets without the engine.

Used by widget and snapshot tests; the end-to-end tests run the real engine
against the fake Ollama server instead.
"""

from __future__ import annotations

import dataclasses

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
from ragtui.model.chunks import Chunk, ChunkMeta, LegRank, chunk_id
from ragtui.model.conversation import (
    AnnotationState,
    Conversation,
    SessionSource,
    StopReason,
    Turn,
    annotated,
    annotating,
)
from ragtui.model.retrieval import RetrievalMeta

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
        events += [AnnotationStarted(annotating(source)),
                   AnnotationFinished(annotated(source, text, relevant=relevant, by="chat", prompt=""))]
    events.append(SynthesisStarted("chat", (1, 2, 3)))
    events += [SynthesisToken(piece) for piece in ANSWER.split(" ") for piece in (piece + " ",)]
    events += [SynthesisFinished(ANSWER, StopReason(stop_reason), citations=(1, 2, 3)), SessionSaved(1)]
    return events


FOLLOW_UP = "And how do breeders use it?"
REWRITE = "How do breeders use natural selection to accumulate variations?"
FOLLOW_UP_ANSWER = ("Breeders pick the small differences they want in each generation and breed from those [7]; "
                    "over many generations the result is striking [7], as with Mendel's peas [8].")


def conversation_record() -> Conversation:
    """A saved two-turn conversation: the finished session above, then a follow-up retrieved as typed and as
    rewritten (its sources numbered on from [6]), with the retrieval details the why view shows."""
    meta = RetrievalMeta.from_json({"mode": "hybrid", "collections": {
        "demo": {"keyword": {"tier": 1, "words": ["breeders", "use"], "kept": ["breeders"], "dropped": ["use"],
                             "idf": {"breeders": 2.71, "use": 0.12}, "mean_idf": 1.42, "gate_passed": True,
                             "and_hits": 4, "hits": 4},
                 "hits": {"vector": 12, "keyword": 4, "both": 3, "merged": 13}, "fusion": "rrf"}},
        "timings_ms": {"embed": {"nomic-embed-text": 30.0}, "legs_and_merge": 10.4, "postprocess": 1.6}})
    rewrite_meta = RetrievalMeta.from_json({"mode": "hybrid", "collections": {
        "demo": {"keyword": {"tier": 2, "words": ["breeders", "natural", "selection", "accumulate", "variations"],
                             "kept": ["breeders", "accumulate", "variations"], "dropped": ["natural", "selection"],
                             "idf": {"breeders": 2.71, "accumulate": 2.2, "variations": 1.9, "natural": 0.4,
                                     "selection": 0.3},
                             "mean_idf": 1.5, "gate_passed": True, "synonyms": {"breeders": ["stockbreeders"]},
                             "and_hits": 1, "hits": 6},
                 "hits": {"vector": 12, "keyword": 6, "both": 4, "merged": 14}, "fusion": "rrf"}}})
    first = [dataclasses.replace(s, state=AnnotationState.RELEVANT if s.number <= 3 else AnnotationState.IRRELEVANT,
                                 annotation=f'"{s.chunk.text.split(".")[0]}." Directly answers the question.'
                                 if s.number <= 3 else "IRRELEVANT!!! Off topic.", annotated_by="chat")
             for s in make_sources()]
    second = []
    quoted = {6: "Breeders select small differences.", 7: "Breeders select small differences.",
              8: "The hybrids of peas show."}                  # each from its own chunk: a real quote
    for number, base in ((6, first[1]), (7, first[1]), (8, first[3])):
        evidence = (LegRank("query", number - 5, 0.05), LegRank("vector", 2, 0.81), LegRank("keyword", 1, 7.5),
                    LegRank("fused", 1, 0.0887), LegRank("rewrite", 1, 0.05), LegRank("rewrite:vector", 1, 0.86),
                    LegRank("rewrite:fused", 1, 0.0909))
        chunk = dataclasses.replace(base.chunk, id=f"{base.chunk.id}-{number}")
        second.append(dataclasses.replace(base, number=number, chunk=chunk, state=AnnotationState.RELEVANT,
                                          annotation=f'"{quoted[number]}" Says how.',
                                          annotated_by="chat", evidence=evidence,
                                          score=0.0952 - number / 1000, rel_score=1.0 - (number - 6) / 4))
    turns = [Turn(query="What does natural selection preserve?", retrieval_meta=meta, sources=first, answer=ANSWER,
                  stop_reason=StopReason.STOP, citations=[1, 2, 3], prompt_numbers=[1, 2, 3]),
             Turn(query=FOLLOW_UP, rewrite=REWRITE, rewrite_by="chat", retrieval_meta=meta, rewrite_meta=rewrite_meta,
                  sources=second, answer=FOLLOW_UP_ANSWER, stop_reason=StopReason.STOP, citations=[7, 8],
                  prompt_numbers=[6, 7, 8], context_turns=[1])]
    return Conversation(collections=["demo", "papers"], config={}, synthesis_model="chat", annotation_model="chat",
                         turns=turns)
