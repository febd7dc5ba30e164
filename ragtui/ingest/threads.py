"""Blocking store and extraction work of an ingest, run in a thread from its event loop."""

from __future__ import annotations

import asyncio
from typing import Any


async def in_thread(fn: Any, *args: Any) -> Any:
    """Run blocking work in a thread; on cancellation wait for it to finish so stores are never closed under it."""
    task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task])
        raise
