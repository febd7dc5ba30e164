"""Ollama: small, fast calls LlamaIndex does not offer (version, tags, a model's context length from /api/show),
and the one embedding client factory.

The probe is used by `doctor` and by the app's reachability check; it is kept on
httpx so it is cheap to import and times out quickly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from ragtui import heavy
from ragtui.errors import RagtuiError
from ragtui.retry import Backoff, ServerBusy, retried, transient
from ragtui.server_limits import BoundedTransport, ReplyLimit, ReplyTooDeep, async_client, loads, sync_client

if TYPE_CHECKING:
    from llama_index.embeddings.ollama import OllamaEmbedding

    from ragtui.config import Settings

PROBE_TIMEOUT = 3.0


class OllamaUnreachable(RagtuiError):
    """Ollama did not answer; the message says where we looked and what to run."""


@dataclass(frozen=True)
class OllamaStatus:
    host: str
    version: str
    models: tuple[str, ...]


def _explain(host: str, exc: Exception) -> OllamaUnreachable:
    reason = type(exc).__name__ if not str(exc) else str(exc)
    return OllamaUnreachable(
        f"Ollama is not reachable at {host} ({reason}). Start it with `ollama serve`, "
        f"or point [ollama] host (RAGTUI_OLLAMA_HOST) at the machine where it runs."
    )


def probe(host: str, max_bytes: int, timeout: float = PROBE_TIMEOUT) -> OllamaStatus:
    """Version and pulled models, or OllamaUnreachable; each answer within `timeout` s and `max_bytes`."""
    base = host.rstrip("/")
    try:
        with sync_client(timeout=timeout, max_bytes=max_bytes, deadline_key="the probe's 3 s") as client:
            version = client.get(f"{base}/api/version")
            version.raise_for_status()
            tags = client.get(f"{base}/api/tags")
            tags.raise_for_status()
    except ReplyLimit as exc:
        raise OllamaUnreachable(f"{exc}; is [ollama] host (RAGTUI_OLLAMA_HOST) pointing at Ollama?") from None
    except (httpx.HTTPError, ValueError) as exc:
        raise _explain(host, exc) from None
    models = _answer(host, "/api/tags", tags).get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, dict) for m in models):
        raise _not_ollama(host, "/api/tags", "a model list that is not a list of models")
    names = tuple(str(m.get("name") or m.get("model", "")) for m in models)
    return OllamaStatus(host=host, version=str(_answer(host, "/api/version", version).get("version", "?")),
                        models=names)


def _not_ollama(host: str, path: str, what: str) -> OllamaUnreachable:
    return OllamaUnreachable(
        f"Ollama at {host} answered {path} with {what}. "
        f"Is [ollama] host (RAGTUI_OLLAMA_HOST) pointing at Ollama?"
    )


def _answer(host: str, path: str, response: httpx.Response) -> dict[str, Any]:
    """A probe answer is untrusted: anything but a JSON object is one clear problem, never a traceback."""
    try:
        body = loads(response.content, f"{host.rstrip('/')}{path}")
    except ValueError:          # JSONDecodeError and UnicodeDecodeError both are
        raise _not_ollama(host, path, "something that is not JSON") from None
    except ReplyTooDeep as exc:
        raise _not_ollama(host, path, "JSON nested too deep to parse") from exc
    if not isinstance(body, dict):
        raise _not_ollama(host, path, "JSON that is not an object")
    return body


def has_model(available: tuple[str, ...], wanted: str) -> bool:
    """Ollama names default to the `latest` tag: "all-minilm" is "all-minilm:latest"."""
    def norm(name: str) -> str:
        return name if ":" in name else f"{name}:latest"
    return norm(wanted) in {norm(a) for a in available}


def context_length_of(show: Any) -> int | None:
    """The "*.context_length" of an /api/show answer's model_info (e.g. "bert.context_length"), None when the
    answer (untrusted) does not say so as a positive integer."""
    return _model_info_int(show, ".context_length")


def embedding_length_of(show: Any) -> int | None:
    """The "*.embedding_length" of an /api/show answer's model_info (e.g. "bert.embedding_length": the dimension
    of an embedding model's vectors), None when the answer does not say so as a positive integer."""
    return _model_info_int(show, ".embedding_length")


def _model_info_int(show: Any, suffix: str) -> int | None:
    info = show.get("model_info") if isinstance(show, dict) else None
    if not isinstance(info, dict):
        return None
    for key, value in info.items():
        if isinstance(key, str) and key.endswith(suffix) and isinstance(value, int) \
                and not isinstance(value, bool) and value > 0:
            return value
    return None


def show_context_length(host: str, model: str, max_bytes: int, timeout: float = PROBE_TIMEOUT) -> int | None:
    """The model's context length from Ollama's /api/show; None when unreachable, unknown or not said.
    A reply past a limit (too big, too slow, nested too deep) raises ReplyLimit: that is no Ollama to trust."""
    try:
        with sync_client(timeout=timeout, max_bytes=max_bytes, deadline_key="the probe's 3 s") as client:
            response = client.post(f"{host.rstrip('/')}/api/show", json={"model": model})
        return context_length_of(_show_answer(host, response))
    except (httpx.HTTPError, ValueError):
        return None


async def ashow(host: str, model: str, max_bytes: int, timeout: float, backoff: Backoff) -> Any:
    """Ollama's /api/show answer for the model, for async callers (the ingest), within `timeout` (ollama.timeout);
    a dropped connection or a busy server asked again under `backoff`; None when unreachable or failing.
    Untrusted: read it with `context_length_of` and `embedding_length_of`."""
    async def show() -> httpx.Response:
        async with async_client(timeout=timeout, max_bytes=max_bytes, deadline_s=timeout,
                                deadline_key="ollama.timeout") as client:
            return ServerBusy.check(await client.post(f"{host.rstrip('/')}/api/show", json={"model": model}))

    try:
        return _show_answer(host, await retried(show, backoff, transient))
    except (httpx.HTTPError, ValueError, ServerBusy):
        return None


def _show_answer(host: str, response: httpx.Response) -> Any:
    if response.status_code != 200:
        return None
    return loads(response.content, f"{host.rstrip('/')}/api/show")


def ollama_embedding(settings: Settings, model: str, *, workers: int | None = None) -> OllamaEmbedding:
    """LlamaIndex's OllamaEmbedding for `model` on the configured host, with ragtui's timeout and batch size.

    trust_env=False: a proxy from the environment must not intercept calls to a local Ollama. The transport
    holds each answer to limits.max_reply_mb and ollama.timeout (for the whole answer).
    """
    heavy.load("llama_index")     # also called from keyword-leg threads (the sense embeddings)
    from llama_index.embeddings.ollama import OllamaEmbedding

    transport = BoundedTransport(max_bytes=settings.limits.max_reply_bytes, deadline_s=settings.ollama.timeout,
                                 deadline_key="ollama.timeout")
    return OllamaEmbedding(model_name=model, base_url=settings.ollama.host, embed_batch_size=settings.embed.batch_size,
                           num_workers=workers,
                           client_kwargs={"timeout": settings.ollama.timeout, "trust_env": False,
                                          "transport": transport})
