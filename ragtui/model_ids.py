"""The display name of a model id: what a status line, an `ask` line or a history list shows.

With an OpenAI-compatible server (llama.cpp's, vLLM) the model id is often the path of the
model file the server loaded, which fills a line at 80 columns. The display name of such an id
is the file name without its directory and its model-file extension; an id with a namespace or
a registry in front (`hf.co/owner/repo:Q4_K_M`, `meta-llama/Llama-3.1-8B-Instruct`) is its last
part, tag kept; an ordinary Ollama name (`llama3.1:8b`) is itself. The full id stays in `--json`
and in details. `served_list` puts the ids a server says it serves on one line, for an error that
names them. Pure, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragtui.sanitize import one_line

MODEL_FILE_EXTENSIONS = (".gguf", ".ggml", ".bin", ".safetensors", ".pt", ".pth", ".onnx", ".llamafile")
_SPLIT_PART = re.compile(r"-\d{5}-of-\d{5}$")        # llama.cpp's split files: model-00001-of-00003.gguf


def short_name(model_id: str) -> str:
    """`model_id` as shown to the user (see the module's docstring); never empty for a non-empty id."""
    model = model_id.strip()
    last = re.split(r"[/\\]", model.rstrip("/\\"))[-1].strip()
    if not last:
        return model
    stem, dot, extension = last.rpartition(".")
    if dot and stem and f".{extension.lower()}" in MODEL_FILE_EXTENSIONS:
        return _SPLIT_PART.sub("", stem) or stem
    return last


SERVED_SHOWN = 10      # model ids a failed check lists; the rest are counted
SERVED_ID_CHARS = 80   # each listed id clipped to this many characters


def served_list(ids: Sequence[str]) -> str:
    """The model ids a server says it serves, for one line: a server's words, so each is made inert (controls
    shown as escapes) and clipped, duplicates once, at most SERVED_SHOWN of them and a count of the rest."""
    names = list(dict.fromkeys(_clipped(one_line(i.strip()), SERVED_ID_CHARS) for i in ids if i.strip()))
    if not names:
        return "none"
    more = len(names) - SERVED_SHOWN
    return ", ".join(names[:SERVED_SHOWN]) + (f" and {more} more" if more > 0 else "")


def _clipped(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"
