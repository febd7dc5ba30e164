"""Health checks behind `ragtui doctor`: one verdict per thing that can be wrong, with the fix."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from enum import StrEnum

import httpx

from ragtui.config import Settings
from ragtui.model_ids import served_list
from ragtui.ollama_api import OllamaUnreachable, has_model, probe, show_context_length
from ragtui.server_limits import ReplyLimit, sync_client


class Verdict(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "FAIL"
    SKIP = "skip"


@dataclass(frozen=True)
class Check:
    name: str
    verdict: Verdict
    detail: str


def run_checks(settings: Settings) -> list[Check]:
    checks = _llm_checks(settings)
    checks.append(_wordnet_check(settings))
    checks.append(_data_dir_check(settings))
    checks.append(_chroma_check(settings))
    return checks


def _llm_checks(s: Settings) -> list[Check]:
    out = _ollama_checks(s)
    if not s.llm.model:
        out.append(Check("llm.model", Verdict.FAIL,
                         "not set: answers need a chat model; set [llm] model (`ollama list` shows what you have)"))
    if s.llm.provider == "openai":
        out.append(_openai_check(s))
    if s.embed.provider == "openai":
        out.extend(_openai_embed_check(s, model) for model in s.embed.all_models)
    return out


def _ollama_checks(s: Settings) -> list[Check]:
    host = s.ollama.host
    if not _ollama_models(s) and s.llm.provider == "openai":
        return [Check("ollama", Verdict.SKIP, 'not used: llm.provider and embed.provider are "openai"')]
    try:
        status = probe(host, s.limits.max_reply_bytes)
    except OllamaUnreachable as exc:
        out = [Check("ollama", Verdict.FAIL, str(exc))]
        return out + [Check(f"model {m}", Verdict.SKIP, "not checked: Ollama unreachable") for m in _ollama_models(s)]
    out = [Check("ollama", Verdict.OK, f"Ollama {status.version} at {host}")]
    for model in _ollama_models(s):
        if has_model(status.models, model):
            out.append(Check(f"model {model}", Verdict.OK, "pulled"))
            if model in s.embed.all_models:
                out.append(_embed_window_check(s, model))
        else:
            out.append(Check(f"model {model}", Verdict.FAIL, f"not pulled at {host}: run `ollama pull {model}` "
                                                             f"(pulled there: {served_list(status.models)})"))
    return out


def _embed_window_check(s: Settings, model: str) -> Check:
    """Warns when a chunk is longer than what the embedding model reads (each is then embedded in averaged parts,
    ingest/embedding.py); the sizes compared in chars, each by its own rule (chunking, ragtui.tokens)."""
    from ragtui.ingest.chunking import CHARS_PER_TOKEN as CHUNK_CHARS_PER_TOKEN
    from ragtui.ingest.embedding import LONG_CHUNK_CHARS, part_chars

    name = f"embed window {model}"
    try:
        tokens = show_context_length(s.ollama.host, model, s.limits.max_reply_bytes)
    except ReplyLimit as exc:
        return Check(name, Verdict.FAIL, str(exc))
    if tokens is None:
        return Check(name, Verdict.SKIP, "Ollama's /api/show gives no context length; chunks are embedded whole "
                     f"up to {LONG_CHUNK_CHARS:,} chars")
    window = part_chars(tokens)
    sizes = {"chunk.size_tokens": s.chunk.size_tokens, "chunk.size_tokens_pdf": s.chunk.pdf_tokens,
             "chunk.size_tokens_av": s.chunk.av_tokens}
    over = {key: size for key, size in sizes.items() if size * CHUNK_CHARS_PER_TOKEN > window}
    if not over:
        return Check(name, Verdict.OK, f"{tokens} tokens (~{window:,} chars): chunks of up to "
                     f"{max(sizes.values()) * CHUNK_CHARS_PER_TOKEN:,} chars are embedded whole")
    fit = window // CHUNK_CHARS_PER_TOKEN
    said = ", ".join(f"{key} = {size} (~{size * CHUNK_CHARS_PER_TOKEN:,} chars)" for key, size in over.items())
    return Check(name, Verdict.WARN, f"{model} reads {tokens} tokens (~{window:,} chars), less than a chunk of "
                 f"{said}: each such chunk is embedded as averaged parts, which blurs what it is about; "
                 f"set chunk sizes to at most {fit} tokens for this model")


def _ollama_models(s: Settings) -> list[str]:
    models = list(s.embed.all_models) if s.embed.provider == "ollama" else []
    if s.llm.provider == "ollama":
        models += [m for m in (s.llm.model, s.llm.annotator) if m]
    return list(dict.fromkeys(models))


def _openai_check(s: Settings) -> Check:
    from ragtui.llm.openai_chat import models_url, served_ids

    url = models_url(s.llm.base_url)
    try:
        with sync_client(timeout=3.0, max_bytes=s.limits.max_reply_bytes, deadline_key="doctor's 3 s") as client:
            r = client.get(url, headers=s.llm.api_key.bearer())
        r.raise_for_status()
        ids = served_ids(r.content, url)
    except (httpx.HTTPError, ValueError, AttributeError, TypeError, ReplyLimit) as exc:
        return Check("llm endpoint", Verdict.FAIL, f"no answer from {url} ({exc}); check [llm] base_url")
    if s.llm.model and s.llm.model not in ids:
        return Check("llm endpoint", Verdict.FAIL, f"{s.llm.base_url} does not serve {s.llm.model!r}; it serves: "
                                                   f"{served_list(ids)} (set [llm] model to one of these)")
    return Check("llm endpoint", Verdict.OK, f"{s.llm.base_url} serves {len(ids)} model(s)")


def _openai_embed_check(s: Settings, model: str) -> Check:
    """One probe text embedded by the OpenAI-compatible embedding server, checked as every ingest batch is."""
    from ragtui.embed_api import EmbedServerError, OpenAICompatibleEmbedding
    from ragtui.stores.vector import BadVectors, check_vectors

    url, key = s.embed_server
    client = OpenAICompatibleEmbedding(base_url=url, api_key=key, model=model, batch_size=1,
                                       timeout=min(s.embed.timeout, 30.0), max_bytes=s.limits.max_reply_bytes)
    name = f"embed model {model}"
    try:
        vector = check_vectors(client.get_general_text_embeddings(["doctor probe"]), 1, None)[0]
    except EmbedServerError as exc:
        hint = "check [embed] model against the server's /v1/models" if exc.status_code == 404 else \
            "check [embed] base_url"
        return Check(name, Verdict.FAIL, f"{url}/embeddings answered {exc}; {hint}")
    except (httpx.HTTPError, ReplyLimit, BadVectors, ValueError) as exc:
        return Check(name, Verdict.FAIL, f"no usable embedding from {url}/embeddings ({exc}); check [embed] "
                     "base_url and model")
    return Check(name, Verdict.OK, f"{url} embeds with it ({len(vector)} dimensions)")


def _wordnet_check(s: Settings) -> Check:
    from ragtui.retrieve.wordnet import WordNetBusy, installed

    if not s.synonyms.enabled:
        return Check("wordnet", Verdict.SKIP, "synonym expansion is off (synonyms.enabled = false)")
    try:
        if installed(s.synonyms.lexicon, s.data_dir):
            return Check("wordnet", Verdict.OK, f"{s.synonyms.lexicon} installed")
    except WordNetBusy as busy:
        return Check("wordnet", Verdict.WARN, str(busy))
    return Check("wordnet", Verdict.FAIL,
                 f"{s.synonyms.lexicon} not installed; expansion is off until you run "
                 "`ragtui wordnet install` (offline: `ragtui wordnet install --from FILE`)")


def _data_dir_check(s: Settings) -> Check:
    path = s.data_dir
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("data dir", Verdict.FAIL, f"{path} is not writable ({exc.strerror}); set [storage] data_dir")
    free_gb = os.statvfs(path).f_bavail * os.statvfs(path).f_frsize / 2**30
    return Check("data dir", Verdict.OK, f"{path} writable, {free_gb:.1f} GiB free")


def _chroma_check(s: Settings) -> Check:
    if not s.chroma.host:
        return Check("chroma", Verdict.OK, f"embedded, under {s.data_dir / 'collections'}")
    url = f"http://{s.chroma.host}:{s.chroma.port}/api/v2/heartbeat"
    try:
        with sync_client(timeout=3.0, max_bytes=s.limits.max_reply_bytes, deadline_key="doctor's 3 s") as client:
            client.get(url).raise_for_status()
    except (httpx.HTTPError, ReplyLimit) as exc:
        return Check("chroma", Verdict.FAIL, f"Chroma server not reachable at {url} ({exc}); "
                     "start it with `chroma run --path DIR --port PORT` or clear [chroma] host")
    return Check("chroma", Verdict.OK, f"server at {s.chroma.host}:{s.chroma.port}")
