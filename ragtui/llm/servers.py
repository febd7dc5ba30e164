"""Which servers the settings use (Ollama, or the chat and embedding `base_url`s of an OpenAI-compatible server) and
whether each answers: the TUI's start-up probe. Importing it loads no HTTP client (the status line names the
servers before the first frame)."""

from __future__ import annotations

from dataclasses import replace

from ragtui.config import Settings
from ragtui.config_sections import Secret
from ragtui.model.servers import Server, ServerKind, Use

PROBE_TIMEOUT = 3.0


def used_servers(settings: Settings) -> list[tuple[ServerKind, str, Secret, tuple[Use, ...]]]:
    """(kind, address, key, uses) per server the settings use; a server used for both is listed once."""
    chat: tuple[ServerKind, str, Secret] = ("ollama", settings.ollama.host, Secret()) \
        if settings.llm.provider == "ollama" else ("openai", settings.llm.base_url, settings.llm.api_key)
    embeddings: tuple[ServerKind, str, Secret] = ("ollama", settings.ollama.host, Secret()) \
        if settings.embed.provider == "ollama" else ("openai", *settings.embed_server)
    out: dict[tuple[ServerKind, str], tuple[Secret, list[Use]]] = {}
    uses: tuple[tuple[Use, tuple[ServerKind, str, Secret]], ...] = (("chat", chat), ("embeddings", embeddings))
    for use, (kind, address, key) in uses:
        out.setdefault((kind, address.rstrip("/")), (key, []))[1].append(use)
    return [(kind, address, key, tuple(used)) for (kind, address), (key, used) in out.items()]


def configured_servers(settings: Settings) -> tuple[Server, ...]:
    """The servers the settings use, not asked yet."""
    return tuple(Server(kind, address, uses) for kind, address, _, uses in used_servers(settings))


def probe_servers(settings: Settings) -> tuple[Server, ...]:
    """Each server the settings use, asked for its model list within PROBE_TIMEOUT s; what it lacks of the
    configured models in `missing`."""
    return tuple(_probe(settings, kind, address, key, uses) for kind, address, key, uses in used_servers(settings))


def _wanted(settings: Settings, uses: tuple[Use, ...]) -> list[str]:
    chat = [settings.llm.model, settings.llm.annotator] if "chat" in uses else []
    embed = list(settings.embed.all_models) if "embeddings" in uses else []
    return [m for m in dict.fromkeys([*chat, *embed]) if m]


def _probe(settings: Settings, kind: ServerKind, address: str, key: Secret, uses: tuple[Use, ...]) -> Server:
    import httpx

    from ragtui.ollama_api import OllamaUnreachable, probe
    from ragtui.server_limits import ReplyLimit, sync_client

    max_bytes = settings.limits.max_reply_bytes
    if kind == "ollama":
        try:
            models = probe(address, max_bytes, PROBE_TIMEOUT).models
        except OllamaUnreachable as exc:
            return Server(kind, address, uses, error=str(exc))
        return listing(settings, Server(kind, address, uses), models)
    from ragtui.llm.openai_chat import models_url, served_ids

    url = models_url(address)
    try:
        with sync_client(timeout=PROBE_TIMEOUT, max_bytes=max_bytes, deadline_key="the probe's 3 s") as client:
            reply = client.get(url, headers=key.bearer())
        reply.raise_for_status()
    except (httpx.HTTPError, ReplyLimit) as exc:
        reason = str(exc) or type(exc).__name__
        return Server(kind, address, uses, error=f"the server at {address} is not reachable ({reason}); "
                                                 f"check {_setting(settings, uses)}")
    try:
        served = tuple(served_ids(reply.content, url))
    except (ValueError, AttributeError, TypeError, ReplyLimit):
        served = ()         # not every server lists its models: it answered, and the first call says the rest
    return listing(settings, Server(kind, address, uses), served)


def listing(settings: Settings, server: Server, models: tuple[str, ...]) -> Server:
    """`server` as answering with this model list: the configured models it lacks in `missing` (Ollama's names
    untagged mean ":latest"; a server that lists nothing is not judged by its list)."""
    from ragtui.ollama_api import has_model

    wanted = _wanted(settings, server.uses)
    if server.kind == "ollama":
        missing = tuple(m for m in wanted if not has_model(models, m))
    else:
        missing = tuple(m for m in wanted if models and m not in models)
    return replace(server, error="", models=models, missing=missing)


def _setting(settings: Settings, uses: tuple[Use, ...]) -> str:
    if "chat" in uses:
        return "[llm] base_url"
    return "[embed] base_url" if settings.embed.base_url else "[llm] base_url"
