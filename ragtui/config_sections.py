"""The [section] tables of the settings: the type and the accepted range or choices of every key.

Defaults live only in the shipped `config.toml`; `ragtui.config` layers the files,
variables and flags over them and checks each value against the rule here (`_rule`'s
metadata), so the two cannot drift apart. A secret (`llm.api_key`) is a `Secret`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtui.retry import Backoff


class Secret:
    """A setting that is never printed or logged (llm.api_key): repr, str and `config show` give "***".

    A crash dump shows each frame's locals by repr (Textual's does), so a plain string key held by the
    settings was printed in clear; this type is what holds it instead, everywhere. `reveal()` is called
    only where the value leaves for the server it belongs to. Deliberately not a str subclass, so no string
    operation hands the value on by accident. (pydantic's SecretStr would do the same, at the cost of
    importing pydantic before the TUI's first frame.)
    """

    __slots__ = ("_value",)

    def __init__(self, value: str = "") -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def bearer(self) -> dict[str, str]:
        """The HTTP header that hands the key to its server (none when unset)."""
        return {"Authorization": f"Bearer {self._value}"} if self._value else {}

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __str__(self) -> str:
        return "***" if self._value else ""

    def __repr__(self) -> str:
        return f"Secret({str(self)!r})"


REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}   # the letters of annotation.irrelevant_flags


def _rule(lo: float | None = None, hi: float | None = None, choices: Sequence[str] | None = None) -> Any:
    """A key's rule: its bounds or its choices, read by `ragtui.config` when it checks a value."""
    return field(metadata={"lo": lo, "hi": hi, "choices": tuple(choices) if choices else None})


@dataclass(frozen=True)
class ChunkSettings:
    size_tokens: int = _rule(16, 1_000_000)
    size_tokens_pdf: int = _rule(0, 1_000_000)
    size_tokens_av: int = _rule(0, 1_000_000)
    overlap_pct: int = _rule(0, 90)
    strategy: str = _rule(choices=("window", "markdown"))

    @property
    def pdf_tokens(self) -> int:
        return self.size_tokens_pdf or min(self.size_tokens, 1024)

    @property
    def av_tokens(self) -> int:
        return self.size_tokens_av or min(self.size_tokens, 512)


@dataclass(frozen=True)
class IngestSettings:
    entropy_max: float = _rule(0, 8)
    entropy_min: float = _rule(0, 8)
    max_file_mb: int = _rule(1, 1_000_000)
    follow_links_outside: bool = _rule()
    zip_max_ratio: int = _rule(1, 100_000)
    zip_max_total_mb: int = _rule(1, 1_000_000)
    toc_ratio: float = _rule(0, 1)
    workers: int = _rule(0, 64)
    vector_process_files: int = _rule(0, 1_000_000_000)
    ignore: list[str] = _rule()
    tesseract_bin: str = _rule()
    whisper_bin: str = _rule()
    whisper_model: str = _rule()
    detex_bin: str = _rule()
    unrtf_bin: str = _rule()


@dataclass(frozen=True)
class EmbedSettings:
    provider: str = _rule(choices=("ollama", "openai"))
    model: str = _rule()
    base_url: str = _rule()
    api_key: Secret = _rule()
    timeout: float = _rule(0.1, 86_400)
    extra_models: list[str] = _rule()
    contextual_prefix: bool = _rule()
    batch_size: int = _rule(1, 4096)
    retries: int = _rule(1, 20)
    backoff_s: float = _rule(0, 600)

    @property
    def backoff(self) -> Backoff:
        """The tries of one embedding batch (retries is the number of attempts, the first included)."""
        return Backoff(self.retries, self.backoff_s)

    @property
    def all_models(self) -> list[str]:
        """Primary model first, then the extra ones, without repeats."""
        return list(dict.fromkeys([self.model, *self.extra_models]))


@dataclass(frozen=True)
class RetrieveSettings:
    top_k: int = _rule(1, 10_000)
    max_chunks_per_file: int = _rule(1, 10_000)
    per_file_cap: str = _rule(choices=("passages", "flat"))
    min_score: float = _rule(0, 1)
    pre_annotate_keep: int = _rule(1, 100)
    annotate_max: int = _rule(1, 10_000)
    min_similarity: float = _rule(0, 1)
    fusion: str = _rule(choices=("boost", "rrf", "norm"))
    keyword_weight: float = _rule(0, 10)
    rrf_k: int = _rule(1, 10_000)
    neighbor_window: int = _rule(0, 5)
    min_token_overlap: float = _rule(0, 1)
    min_vector_score: float = _rule(0, 1)


@dataclass(frozen=True)
class StrategySettings:
    multi_query: int = _rule(0, 4)
    fragments: bool = _rule()
    hyde: str = _rule(choices=("off", "on", "adaptive"))
    hyde_prompts: int = _rule(1, 3)
    hyde_below: float = _rule(0, 1)
    timeout_s: float = _rule(1, 3_600)
    max_tokens: int = _rule(16, 4_096)
    sentence_window: int = _rule(0, 10)

    @property
    def active(self) -> bool:
        """Any strategy is on: a question is searched more than once, or with a model's help."""
        return bool(self.multi_query) or self.hyde != "off" or self.fragments or bool(self.sentence_window)


@dataclass(frozen=True)
class RerankSettings:
    enabled: bool = _rule()
    base_url: str = _rule()
    model: str = _rule()
    top_n: int = _rule(1, 1_000)
    timeout: float = _rule(0.1, 3_600)


@dataclass(frozen=True)
class KeywordSettings:
    enabled: bool = _rule()
    min_query_ic: float = _rule(0, 100)
    long_query_threshold: int = _rule(1, 1000)
    bm25_k1: float = _rule(0, 10)
    bm25_b: float = _rule(0, 1)


@dataclass(frozen=True)
class SynonymSettings:
    enabled: bool = _rule()
    max_per_word: int = _rule(0, 100)
    lexicon: str = _rule()
    sense: str = _rule(choices=("query", "first"))


@dataclass(frozen=True)
class LlmSettings:
    provider: str = _rule(choices=("ollama", "openai"))
    model: str = _rule()
    annotation_model: str = _rule()
    base_url: str = _rule()
    api_key: Secret = _rule()
    max_tokens: int = _rule(1, 1_000_000)
    context_window: int = _rule(0, 10_000_000)
    context_chunks: int = _rule(1, 10_000)
    packing: str = _rule(choices=("best-first", "every-source"))
    temperature: float = _rule(0, 2)
    request_timeout: float = _rule(1, 86_400)
    reply_deadline_s: float = _rule(1, 86_400)
    retries: int = _rule(1, 20)
    backoff_s: float = _rule(0, 600)

    @property
    def backoff(self) -> Backoff:
        """The tries of one LLM call whose server could not be reached or cut its stream (attempts, the first
        included)."""
        return Backoff(self.retries, self.backoff_s)

    @property
    def annotator(self) -> str:
        return self.annotation_model or self.model


@dataclass(frozen=True)
class AnnotationSettings:
    enabled: bool = _rule()
    concurrency: int = _rule(1, 256)
    max_tokens: int = _rule(1, 100_000)
    temperature: float = _rule(0, 2)
    prompt_file: str = _rule()
    irrelevant_re: str = _rule()
    irrelevant_flags: str = _rule()

    @property
    def irrelevant_marker(self) -> re.Pattern[str]:
        """The irrelevance marker an annotation writes, as a pattern: irrelevant_re with irrelevant_flags."""
        flags = 0
        for letter in self.irrelevant_flags:
            flags |= REGEX_FLAGS[letter]
        return re.compile(self.irrelevant_re, flags)


@dataclass(frozen=True)
class OllamaSettings:
    host: str = _rule()
    timeout: float = _rule(0.1, 86_400)


@dataclass(frozen=True)
class LimitsSettings:
    max_reply_mb: float = _rule(0.01, 4096)

    @property
    def max_reply_bytes(self) -> int:
        return int(self.max_reply_mb * 2**20)


@dataclass(frozen=True)
class ChromaSettings:
    host: str = _rule()
    port: int = _rule(1, 65_535)
    timeout: float = _rule(0.1, 3_600)
    hnsw_ef: int = _rule(1, 4_096)
    hnsw_m: int = _rule(2, 512)


@dataclass(frozen=True)
class StorageSettings:
    data_dir: str = _rule()


@dataclass(frozen=True)
class UiSettings:
    theme: str = _rule()
    page_graphics: str = _rule(choices=("auto", "kitty", "sixel", "halfblock"))


@dataclass(frozen=True)
class ServeSettings:
    max_sessions: int = _rule(1, 1_000)


@dataclass(frozen=True)
class CiteSettings:
    bib_file: str = _rule()


@dataclass(frozen=True)
class ResearchSettings:
    """A research run's plan and limits (`ragtui research`, the TUI's research key, the MCP research tool)."""

    max_rounds: int = _rule(0, 10)
    max_model_calls: int = _rule(3, 10_000)
    max_tokens: int = _rule(1_000, 100_000_000)
    max_seconds: float = _rule(1, 86_400)
    edit_plan: bool = _rule()


@dataclass(frozen=True)
class KeysSettings:
    """The TUI's keys, one entry per action (tui/keymap.py names them and checks the values)."""

    focus_query: str = _rule()
    synthesize: str = _rule()
    reannotate_selected: str = _rule()
    reannotate_all: str = _rule()
    toggle_source: str = _rule()
    continue_answer: str = _rule()
    new_session: str = _rule()
    edit_rewrite: str = _rule()
    earlier_turn: str = _rule()
    later_turn: str = _rule()
    details: str = _rule()
    reannotate_with: str = _rule()
    tab_relevant: str = _rule()
    tab_filtered: str = _rule()
    tab_all: str = _rule()
    filter_sources: str = _rule()
    cancel: str = _rule()
    research_run: str = _rule()
    cancel_part: str = _rule()
    edit_question: str = _rule()
    open_answer: str = _rule()
    copy_answer: str = _rule()
    copy_source: str = _rule()
    page_view: str = _rule()
    history: str = _rule()
    switcher: str = _rule()
    ingest: str = _rule()
    new_collection: str = _rule()
    refresh_collections: str = _rule()
    toggle_collections: str = _rule()
    next_theme: str = _rule()
    notices: str = _rule()
    help: str = _rule()
    quit: str = _rule()
