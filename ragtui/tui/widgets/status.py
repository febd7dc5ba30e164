"""The status line: first the state word (is work running or done?), then where Ollama is and whether
it answers, models, WordNet, the retrieval tier and timings.

Degraded modes are spelled out here in words (and in colour), never only implied.
Its state is a set of reactives: setting one redraws the line.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from ragtui.sanitize import one_line

# The state words' colours: the outcomes in theirs, running work (retrieving, annotating, writing) in cyan.
STATE_STYLE = {"done": "bold green", "cancelled": "bold yellow", "failed": "bold red", "ready": "bold"}


class StatusLine(Widget):
    reachable: reactive[bool | None] = reactive(None)       # None while the start-up probe runs
    missing_models: reactive[tuple[str, ...]] = reactive(())
    keyword_only = reactive(False)
    wordnet: reactive[bool | None] = reactive(None)
    wordnet_reason = reactive("")
    retrieval = reactive("")                                  # "tier AND · 42 ms"
    state = reactive("ready")                                 # the first word: ready, retrieving, annotating, ...
    activity = reactive("")                                   # what goes with it: "3/10", "saved as session 4"

    def __init__(self, host: str, chat_model: str, annotation_model: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.host = one_line(host.removeprefix("http://").removeprefix("https://"))
        self.chat_model = one_line(chat_model)
        self.annotation_model = one_line(annotation_model)

    def render(self) -> Text:
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(self.state, style=STATE_STYLE.get(self.state, "bold cyan"))
        if self.activity:
            line.append(f" {one_line(self.activity)}", style="italic")
        line.append(" · ")
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
            line.append(one_line(f" (not pulled: {', '.join(self.missing_models)})"), style="bold yellow")
        if self.keyword_only or self.reachable is False:
            line.append(" · KEYWORD-ONLY", style="bold yellow")
        if self.wordnet is not None:
            line.append(" · WordNet " + ("on" if self.wordnet else "off"), style="" if self.wordnet else "yellow")
        if self.retrieval:
            line.append(f" · {one_line(self.retrieval)}")
        return line
