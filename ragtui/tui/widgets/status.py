"""The status line: where Ollama is and whether it answers, models, retrieval tier and timings, WordNet.

Degraded modes are spelled out here in words (and in colour), never only implied.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static


class StatusLine(Static):
    def __init__(self, host: str, chat_model: str, annotation_model: str, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.host = host.removeprefix("http://").removeprefix("https://")
        self.chat_model = chat_model
        self.annotation_model = annotation_model
        self.reachable: bool | None = None      # None while the start-up probe runs
        self.missing_models: tuple[str, ...] = ()
        self.keyword_only = False
        self.wordnet: bool | None = None
        self.wordnet_reason = ""
        self.retrieval = ""                      # "tier AND · 42 ms"
        self.activity = ""                       # "retrieving", "annotating 3/8", "saved #4"

    def on_mount(self) -> None:
        self.redraw()

    def update_state(self, **fields: Any) -> None:
        for name, value in fields.items():
            if not hasattr(self, name):
                raise AttributeError(name)
            setattr(self, name, value)
        self.redraw()

    def redraw(self) -> None:
        line = Text(no_wrap=True, overflow="ellipsis")
        if self.reachable is None:
            line.append(f"ollama {self.host} …", style="dim")
        elif self.reachable:
            line.append("● ", style="green")
            line.append(f"ollama {self.host}")
        else:
            line.append("✗ ", style="bold red")
            line.append(f"ollama {self.host} down", style="bold red")
        models = self.chat_model or "no llm.model"
        if self.annotation_model and self.annotation_model != self.chat_model:
            models += f"/{self.annotation_model}"
        line.append(f" · {models}", style="yellow" if not self.chat_model else "")
        if self.missing_models:
            line.append(f" (not pulled: {', '.join(self.missing_models)})", style="bold yellow")
        if self.keyword_only or self.reachable is False:
            line.append(" · KEYWORD-ONLY", style="bold yellow")
        if self.wordnet is not None:
            line.append(" · WordNet " + ("on" if self.wordnet else "off"), style="" if self.wordnet else "yellow")
        if self.retrieval:
            line.append(f" · {self.retrieval}")
        if self.activity:
            line.append(f" · {self.activity}", style="italic")
        self.update(line)
