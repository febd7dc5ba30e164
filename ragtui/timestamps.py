"""The one way ragtui writes a time down: UTC, ISO 8601, to the second."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> str:
    """The current time, e.g. "2026-05-01T09:30:00+00:00" (history sessions, ingest records, manifests)."""
    return datetime.now(UTC).isoformat(timespec="seconds")
