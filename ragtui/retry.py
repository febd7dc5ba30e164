"""How many times a call to a server is tried, and how long to wait in between: the one rule for embedding
batches (embed.retries, embed.backoff_s) and LLM calls (llm.retries, llm.backoff_s).

Exponential backoff: `attempts` tries in all, the first included; before the k-th retry a pause of
base_s x 2^(k-1), so a server that is restarting or busy gets a doubling breather rather than a burst of
retries ("Exponential Backoff And Jitter", AWS Architecture Blog, 2015).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """`attempts` tries of one call in all (at least 1: no retry); `base_s` seconds before the first retry."""

    attempts: int
    base_s: float

    def pause(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1 is the first retry; 0 or less waits for nothing)."""
        return self.base_s * 2 ** (retry - 1) if retry > 0 else 0.0
