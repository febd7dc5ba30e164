"""The status line: first the state word (is work running or done?), then each server the settings use (Ollama,
an OpenAI-compatible server for the chat models, the embeddings or both) and whether it answers, models, WordNet,
the retrieval tier and timings.

Degraded modes are spelled out here in words (and in colour), never only implied.
Its state is a set of reactives: setting one redraws the line.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from ragtui.model.retrieval import RetrievalMeta
from ragtui.model.servers import Server, serving
from ragtui.model_ids import short_name
from ragtui.sanitize import one_line


class Activity(StrEnum):
    """The status line's first word: what the research view is doing, or how its last work ended."""

    READY = "ready"
    LOADING = "loading the engine"     # a question typed while the start-up warm-up still imports the engine
    RETRIEVING = "retrieving"
    RETRIEVED = "retrieved"
    ANNOTATING = "annotating"
    WRITING = "writing"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


# Work still running: a save that reports in the middle of it does not end it.
RUNNING = frozenset({Activity.LOADING, Activity.RETRIEVING, Activity.RETRIEVED, Activity.ANNOTATING, Activity.WRITING})
# The state words' colours: the outcomes in theirs, running work in cyan.
STATE_STYLE = {Activity.DONE: "bold green", Activity.CANCELLED: "bold yellow", Activity.FAILED: "bold red",
               Activity.READY: "bold"}


class StatusLine(Widget):
    servers: reactive[tuple[Server, ...]] = reactive(())    # as the last probe found them
    keyword_only = reactive(False)
    wordnet: reactive[bool | None] = reactive(None)
    wordnet_reason = reactive("")
    retrieval = reactive("")                                  # "tier AND · 42 ms"
    state: reactive[Activity] = reactive(Activity.READY)      # the first word
    activity = reactive("")                                   # what goes with it: "3/10", "saved as session 4"

    def __init__(self, configured: tuple[Server, ...], chat_model: str, annotation_model: str,
                 **kwargs: Any) -> None:
        """`configured`: the servers the settings use, shown as being asked until a probe says how they are."""
        super().__init__(**kwargs)
        self.configured = configured
        self.chat_model = one_line(short_name(chat_model))         # the display names; details show the full id
        self.annotation_model = one_line(short_name(annotation_model))

    @property
    def probed(self) -> bool:
        return bool(self.servers)

    def render(self) -> Text:
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(self.state, style=STATE_STYLE.get(self.state, "bold cyan"))
        if self.activity:
            line.append(f" {one_line(self.activity)}", style="italic")
        for server in self.servers or self.configured:
            line.append(" · ")
            if not self.probed:
                line.append(f"{server_name(server)} …", style="dim")
            elif server.reachable:
                line.append("● ", style="green")
                line.append(server_name(server))
            else:
                line.append("✗ ", style="bold red")
                line.append(f"{server_name(server)} down", style="bold red")
        models = self.chat_model or "no llm.model"
        if self.annotation_model and self.annotation_model != self.chat_model:
            models += f"/{self.annotation_model}"
        line.append(f" · {models}", style="yellow" if not self.chat_model else "")
        missing = [short_name(m) for s in self.servers for m in s.missing]
        if missing:
            said = "not pulled" if all(s.kind == "ollama" for s in self.servers if s.missing) else "not served"
            line.append(one_line(f" ({said}: {', '.join(missing)})"), style="bold yellow")
        embeddings = serving(self.servers, "embeddings")
        if self.keyword_only or (embeddings is not None and not embeddings.reachable):
            line.append(" · KEYWORD-ONLY", style="bold yellow")
        if self.wordnet is not None:
            line.append(" · WordNet " + ("on" if self.wordnet else "off"), style="" if self.wordnet else "yellow")
        if self.retrieval:
            line.append(f" · {one_line(self.retrieval)}")
        return line


# How the status line names what an OpenAI-compatible server is used for.
USE_WORDS = {"chat": "llm", "embeddings": "embed"}


def server_name(server: Server) -> str:
    """`ollama HOST`, or `llm HOST`, `embed HOST`, `llm+embed HOST` for an OpenAI-compatible server."""
    host = one_line(server.address.removeprefix("http://").removeprefix("https://"))
    if server.kind == "ollama":
        return f"ollama {host}"
    return f"{'+'.join(USE_WORDS[u] for u in server.uses)} {host}"


def describe_retrieval(meta: RetrievalMeta | None) -> str:
    """`tier AND/OR · 42 ms` from retrieval_meta: the keyword tiers that fired and the retrieval time."""
    if meta is None:
        return ""
    tiers = list(dict.fromkeys(str(c.keyword.tier) for c in meta.collections.values()))
    ms = (meta.legs_and_merge_ms or 0) + (meta.postprocess_ms or 0)
    embed_ms = sum(meta.embed_ms.values())
    parts = [f"tier {'/'.join(tiers)}"] if tiers else []
    if ms or embed_ms:
        parts.append(f"{ms + embed_ms:.0f} ms" + (f" (embed {embed_ms:.0f})" if embed_ms else ""))
    return " · ".join(parts)
