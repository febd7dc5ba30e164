"""The token estimate every prompt budget uses: no tokenizer, characters / 3.5.

Packing cuts the context to the window with it and the providers size Ollama's
num_ctx with it, so both must use the same numbers; ingest sizes the parts of a
text too long for an embedding model's window with it too.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 3.5            # errs towards more tokens than English text's ~4 chars per token
PROMPT_OVERHEAD_TOKENS = 2000    # system prompt, query, framing and chat template


def estimate_tokens(text: str) -> int:
    """Tokens `text` is expected to take: ceil(chars / CHARS_PER_TOKEN)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)
