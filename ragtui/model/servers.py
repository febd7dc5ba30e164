"""The servers a configuration talks to, as a probe found them: Ollama, or an OpenAI-compatible server (llama.cpp's,
vLLM) for the chat models, the embeddings, or both."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

ServerKind = Literal["ollama", "openai"]
Use = Literal["chat", "embeddings"]


@dataclass(frozen=True)
class Server:
    """One server the settings use; `error` says why it did not answer ("" when it did)."""

    kind: ServerKind
    address: str                     # Ollama's host, or the OpenAI-compatible base_url
    uses: tuple[Use, ...]            # what the settings ask of it
    error: str = ""
    models: tuple[str, ...] = ()     # what it lists (Ollama's pulled models, the served model ids)
    missing: tuple[str, ...] = ()    # the configured models it does not list

    @property
    def reachable(self) -> bool:
        return not self.error


def serving(servers: tuple[Server, ...], use: Use) -> Server | None:
    """The server the settings use for `use` (chat or embeddings)."""
    return next((s for s in servers if use in s.uses), None)


def annotators(servers: tuple[Server, ...], embedders: Collection[str]) -> list[str]:
    """The models the chat server lists that can annotate (an embedding model cannot; Ollama's ":latest" tag
    dropped)."""
    chat = serving(servers, "chat")
    return [name for m in (chat.models if chat else ()) if (name := m.removesuffix(":latest")) not in embedders]
